using System.Collections.Concurrent;
using Quintet.Components;
using Quintet.Core.Groups;
using Quintet.Core.Groups.Light;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Lifecycle;

/// <summary>
/// Puts the factory of each class whose manifest names one into the class's ClassGroup on this manager (role
/// <c>factory</c>), and hands it the group's views in order, so that it sees instances and other managers' factories
/// come and go.
/// </summary>
internal sealed partial class FactoryMemberships(ILogger logger)
{
    private readonly ConcurrentDictionary<ComponentClass, LightGroupMember> _members = new();

    /// <summary>Joins the class's ClassGroup for its factory (in the background; failures are logged).</summary>
    public void Start(GroupService groups, ComponentClass componentClass, string nodeName)
    {
        if (componentClass.Factory is DefaultClassFactory)
        {
            return;
        }

        _ = Task.Run(async () =>
        {
            try
            {
                var member = await groups.JoinLightGroupAsync(
                    InstanceGroups.ClassGroupName(componentClass.Name),
                    new LightGroupJoinOptions { Role = "factory", Tag = nodeName, SubscribeToViews = true });
                if (!_members.TryAdd(componentClass, member))
                {
                    await member.DisposeAsync();
                    return;
                }

                await PumpAsync(componentClass, member);
            }
            catch (Exception e) when (e is GroupUnavailableException or OperationCanceledException)
            {
                LogJoinFailed(logger, e, componentClass.Name);
            }
        });
    }

    /// <summary>Takes the factory of <paramref name="componentClass"/> out of its ClassGroup (undeploy).</summary>
    public async Task StopAsync(ComponentClass componentClass)
    {
        if (_members.TryRemove(componentClass, out var member))
        {
            await member.DisposeAsync();
        }
    }

    private async Task PumpAsync(ComponentClass componentClass, LightGroupMember member)
    {
        LightGroupView? previous = null;
        await foreach (var groupEvent in member.Events.ReadAllAsync())
        {
            if (groupEvent is not LightViewInstalled { View: var view })
            {
                continue;
            }

            var members = view.Members.Select(m => new GroupMember(m.Id.ToString(), m.Tag, m.Role)).ToList();
            var before = previous?.Members.Select(m => new GroupMember(m.Id.ToString(), m.Tag, m.Role)).ToList() ?? [];
            previous = view;
            var change = new GroupViewChange(componentClass.Name, view.Id, members, [.. members.Where(m => !before.Contains(m))], [.. before.Where(m => !members.Contains(m))]);
            try
            {
                await componentClass.Factory.OnClassGroupViewAsync(change, CancellationToken.None);
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                LogFactoryFailed(logger, e, componentClass.Name);
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "The factory of {Class} could not join its ClassGroup")]
    private static partial void LogJoinFailed(ILogger logger, Exception exception, string @class);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The factory of {Class} failed on a ClassGroup view")]
    private static partial void LogFactoryFailed(ILogger logger, Exception exception, string @class);
}
