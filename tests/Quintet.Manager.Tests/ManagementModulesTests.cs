using ProtoBuf;
using Quintet.Components;
using Quintet.Manager.Packages;

namespace Quintet.Manager.Tests;

/// <summary>
/// Management and debug modules are read when a package loads: what the console presents of each operation, and a
/// refusal that names the field for what it could not present or the managers could not run.
/// </summary>
public sealed class ManagementModulesTests
{
    [Fact]
    public void A_view_opens_to_readers_an_action_to_its_contract_role_and_the_form_lists_each_field_by_its_json_name()
    {
        var view = Describe<IGoodAdministration>(nameof(IGoodAdministration.ShowAsync));
        Assert.Equal((true, "reader", "Show", "", ""), (view.IsView, view.Role, view.Label, view.Description, view.Confirmation));
        Assert.Empty(view.Fields);

        var action = Describe<IGoodAdministration>(nameof(IGoodAdministration.AdjustAsync));
        Assert.Equal((false, "operator", "Adjust the limit", "Sets a new limit.", "Adjust it?"), (action.IsView, action.Role, action.Label, action.Description, action.Confirmation));
        Assert.Equal(["limitCents:integer", "ratio:number", "note:string", "notify:boolean", "mode:enum"], action.Fields.Select(f => $"{f.Name}:{f.Kind}"));
        Assert.Equal(["Soft", "Hard"], action.Fields.Single(f => f.Kind == "enum").Values);

        Assert.Equal("admin", Describe<IGoodAdministration>(nameof(IGoodAdministration.CloseAsync)).Role);
    }

    [Fact]
    public void An_action_open_to_readers_an_unknown_role_and_a_field_the_console_cannot_ask_for_are_refused_by_name()
    {
        Assert.Equal(
            "f: Wipe changes the instance (it is not marked [ReadOnlyOperation]), so it needs 'operator' or 'admin', not 'reader'.",
            Assert.Throws<PackageException>(() => Describe<IBadAdministration>(nameof(IBadAdministration.WipeAsync))).Message);
        Assert.Equal(
            "f: [ManagementOperation] Role 'root' is not one of the administrative roles reader, operator, admin.",
            Assert.Throws<PackageException>(() => Describe<IBadAdministration>(nameof(IBadAdministration.RootAsync))).Message);
        Assert.Contains(
            "has field Tags of type List`1; a management request holds only strings, numbers, booleans and enums",
            Assert.Throws<PackageException>(() => Describe<IBadAdministration>(nameof(IBadAdministration.TagAsync))).Message,
            StringComparison.Ordinal);
        Assert.Contains(
            "ActionsRole 'reader' is not 'operator' or 'admin'",
            Assert.Throws<PackageException>(() => Describe<IReaderActions>(nameof(IReaderActions.ShowAsync))).Message,
            StringComparison.Ordinal);
    }

    [Fact]
    public void A_debug_module_is_made_once_for_its_class_and_one_for_another_class_is_refused()
    {
        var module = ManagementModules.LoadDebugModule(typeof(DebuggedComponent), "f");
        Assert.IsType<DebuggedModule>(module);
        Assert.Equal([new("calls", "0")], module!.DescribeInstance(new DebuggedComponent()));
        Assert.Null(module.DescribeMessage("Show", new ShowRequest()));
        Assert.Null(ManagementModules.LoadDebugModule(typeof(PlainComponent), "f"));
        Assert.Equal(
            $"f: [ComponentDebugModule] names {typeof(DebuggedModule).FullName}, which is not a non-abstract class derived from Quintet.Components.DebugModule<{typeof(MisdebuggedComponent).FullName}>.",
            Assert.Throws<PackageException>(() => ManagementModules.LoadDebugModule(typeof(MisdebuggedComponent), "f")).Message);
    }

    [Fact]
    public void Administrative_roles_cover_the_weaker_ones_only()
    {
        Assert.True(ManagementModules.Covers("admin", "operator"));
        Assert.True(ManagementModules.Covers("operator", "operator"));
        Assert.False(ManagementModules.Covers("reader", "operator"));
        Assert.False(ManagementModules.Covers("teller", "reader"));
        Assert.Equal(["admin", "operator"], ManagementModules.RolesCovering("operator"));
    }

    private static ManagementOperation Describe<TContract>(string method)
    {
        var info = typeof(TContract).GetMethod(method)!;
        var contract = typeof(TContract).GetCustomAttributes(typeof(ManagementContractAttribute), false).Cast<ManagementContractAttribute>().Single();
        return ManagementModules.Describe(info, method[..^5], contract, info.GetParameters()[0].ParameterType, "f");
    }

    public enum LimitMode
    {
        Soft,
        Hard,
    }

    [ProtoContract] public sealed class ShowRequest;

    [ProtoContract] public sealed class AdjustRequest
    {
        [ProtoMember(1)] public long LimitCents { get; set; }
        [ProtoMember(2)] public double Ratio { get; set; }
        [ProtoMember(3)] public string Note { get; set; } = "";
        [ProtoMember(4)] public bool Notify { get; set; }
        [ProtoMember(5)] public LimitMode Mode { get; set; }
    }

    [ProtoContract] public sealed class TagRequest { [ProtoMember(1)] public List<string> Tags { get; set; } = []; }

    [ProtoContract] public sealed class Reply;

    [ComponentContract("tests.GoodAdministration"), ManagementContract("Good", ActionsRole = "operator")]
    public interface IGoodAdministration
    {
        [ReadOnlyOperation] Task<Reply> ShowAsync(ShowRequest request, CancellationToken cancellationToken);

        [ManagementOperation(Label = "Adjust the limit", Description = "Sets a new limit.", Confirmation = "Adjust it?")]
        Task<Reply> AdjustAsync(AdjustRequest request, CancellationToken cancellationToken);

        [ManagementOperation(Role = "admin")] Task<Reply> CloseAsync(ShowRequest request, CancellationToken cancellationToken);
    }

    [ComponentContract("tests.BadAdministration"), ManagementContract("Bad")]
    public interface IBadAdministration
    {
        [ManagementOperation(Role = "reader")] Task<Reply> WipeAsync(ShowRequest request, CancellationToken cancellationToken);

        [ManagementOperation(Role = "root")] Task<Reply> RootAsync(ShowRequest request, CancellationToken cancellationToken);

        Task<Reply> TagAsync(TagRequest request, CancellationToken cancellationToken);
    }

    [ComponentContract("tests.ReaderActions"), ManagementContract("Readers", ActionsRole = "reader")]
    public interface IReaderActions
    {
        [ReadOnlyOperation] Task<Reply> ShowAsync(ShowRequest request, CancellationToken cancellationToken);
    }

    [ComponentDebugModule(typeof(DebuggedModule))]
    public sealed class DebuggedComponent : Component
    {
        public int Calls { get; set; }
    }

    public sealed class DebuggedModule : DebugModule<DebuggedComponent>
    {
        protected override IEnumerable<KeyValuePair<string, string>> DescribeState(DebuggedComponent instance) => [new("calls", instance.Calls.ToString(System.Globalization.CultureInfo.InvariantCulture))];
    }

    [ComponentDebugModule(typeof(DebuggedModule))]
    public sealed class MisdebuggedComponent : Component;

    public sealed class PlainComponent : Component;
}
