using Bunit;
using Grpc.Core;
using Microsoft.AspNetCore.Components.Web.Virtualization;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.FluentUI.AspNetCore.Components;
using Quintet.Console.Admin;
using Quintet.Console.Components.Explorer;
using Quintet.Console.Components.Pages;
using Quintet.Protocol.Admin;

namespace Quintet.Console.Tests;

/// <summary>The console's pages against a fake admin API: no process, no network.</summary>
public sealed class ConsoleComponentTests : BunitContext
{
    private readonly FakeAdminApi _admin = new();

    public ConsoleComponentTests()
    {
        JSInterop.Mode = JSRuntimeMode.Loose;
        Services.AddFluentUIComponents();
        Services.AddSingleton<IAdminApi>(_admin);
    }

    [Fact]
    public async Task Tree_shows_the_managers_their_packages_the_classes_and_the_tools()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("reader");
        var tree = await _admin.GetClusterTreeAsync(new GetClusterTreeRequest { PageSize = 1 }, CancellationToken.None);

        var cut = Render<ClusterTree>(p => p.Add(c => c.Tree, tree));

        var nodes = cut.FindAll("span.node").Select(n => n.TextContent).ToList();
        Assert.Contains("Cluster quintet", nodes);
        Assert.Contains("manager-2 · up · 7 instances", nodes);
        Assert.Contains("Bank@1.0.0", nodes);
        Assert.Contains("Bank 1.0.0", nodes);
        Assert.Contains("Bank.Account (250)", nodes);
        Assert.Contains("Groups", nodes);
        Assert.Contains("Shared structures", nodes);
        Assert.Contains("Coordination", nodes);
        Assert.Contains("Checkpoint stores", nodes);
    }

    [Fact]
    public void Checkpoint_stores_show_a_table_per_manager_the_problem_of_an_unhealthy_one_and_who_did_not_answer()
    {
        AddAuthorization().SetAuthorized("rita").SetRoles("reader");

        var cut = Render<CheckpointStoresView>();

        cut.WaitForAssertion(() => Assert.Equal(2, cut.FindAll("section.checkpoint-store").Count));
        var healthy = cut.Find("section[data-manager='manager-1']");
        Assert.Contains("manager-1: replicated, healthy", healthy.TextContent, StringComparison.Ordinal);
        Assert.Contains("/data/manager-1/replica.log", healthy.TextContent, StringComparison.Ordinal);
        Assert.Contains("2 MiB", healthy.TextContent, StringComparison.Ordinal);
        Assert.Contains("1200 / 300", healthy.TextContent, StringComparison.Ordinal);
        Assert.Contains("majority", healthy.TextContent, StringComparison.Ordinal);
        Assert.Empty(healthy.QuerySelectorAll(".problem"));
        var sick = cut.Find("section[data-manager='manager-2']");
        Assert.Contains("unhealthy", sick.TextContent, StringComparison.Ordinal);
        Assert.Contains("No space left on device", sick.QuerySelector(".problem")!.TextContent, StringComparison.Ordinal);
        Assert.Contains("No answer in time from: manager-3", cut.Find(".unreachable").TextContent, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Instance_pages_are_fetched_as_they_are_scrolled_to_and_only_a_few_are_kept()
    {
        var admin = new FakeAdminApi(instances: 100_000);
        var pages = new InstancePages(new GetClusterTreeRequest { ClassName = "Bank.Account" }, admin.GetClusterTreeAsync);

        var first = await pages.ProvideAsync(new ItemsProviderRequest(0, 40, CancellationToken.None));
        Assert.Equal(1, pages.Fetches);
        Assert.Equal(100_000, first.TotalItemCount);
        Assert.Equal("acct-00000", first.Items.First().Key);

        // Keys 190..229 are on pages 1 and 2: two more fetches, by offset, and no more.
        var later = await pages.ProvideAsync(new ItemsProviderRequest(190, 40, CancellationToken.None));
        Assert.Equal(3, pages.Fetches);
        Assert.Equal(["acct-00190", "acct-00229"], [later.Items.First().Key, later.Items.Last().Key]);
        Assert.All(admin.TreeRequests, r => Assert.Equal(InstancePages.PageSize, r.PageSize));
        Assert.All(admin.TreeRequests, r => Assert.Equal("Bank.Account", r.ClassName));
        Assert.Equal([0, 100, 200], admin.TreeRequests.Select(r => r.Offset));

        // Scrolling back within the kept pages asks nothing.
        await pages.ProvideAsync(new ItemsProviderRequest(100, 40, CancellationToken.None));
        Assert.Equal(3, pages.Fetches);

        // A jump to the end asks for the last page alone, not the 996 pages before it.
        var end = await pages.ProvideAsync(new ItemsProviderRequest(99_980, 40, CancellationToken.None));
        Assert.Equal(4, pages.Fetches);
        Assert.Equal(99_900, admin.TreeRequests[^1].Offset);
        Assert.Equal(["acct-99980", "acct-99999"], [end.Items.First().Key, end.Items.Last().Key]);
    }

    [Fact]
    public async Task A_listing_longer_than_the_furthest_offset_lists_up_to_it_and_says_so()
    {
        var admin = new FakeAdminApi(instances: 300_000);
        var pages = new InstancePages(new GetClusterTreeRequest(), admin.GetClusterTreeAsync);

        var first = await pages.ProvideAsync(new ItemsProviderRequest(0, 40, CancellationToken.None));
        Assert.Equal(InstancePages.MaxOffset + InstancePages.PageSize, first.TotalItemCount);
        Assert.Equal(300_000, pages.Total);
        Assert.True(pages.Capped);
        var last = await pages.ProvideAsync(new ItemsProviderRequest(InstancePages.MaxOffset + 60, 40, CancellationToken.None));
        Assert.Equal(InstancePages.MaxOffset, admin.TreeRequests[^1].Offset);
        Assert.Equal(40, last.Items.Count());
        Assert.Empty((await pages.ProvideAsync(new ItemsProviderRequest(InstancePages.MaxOffset + 100, 40, CancellationToken.None))).Items);
        Assert.All(admin.TreeRequests, r => Assert.InRange(r.Offset, 0, InstancePages.MaxOffset));
    }

    [Fact]
    public void Instance_list_renders_the_first_page_without_loading_the_rest()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("reader");
        var admin = new FakeAdminApi(instances: 100_000);
        Services.AddSingleton<IAdminApi>(admin);

        var cut = Render<InstanceList>(p => p.Add(c => c.ClassName, "Bank.Account"));

        cut.WaitForAssertion(() => Assert.NotEmpty(cut.FindAll("tr[data-key]")));
        Assert.Equal("acct-00000", cut.FindAll("tr[data-key]")[0].GetAttribute("data-key"));
        Assert.Contains("100000 instances", cut.Markup);
        Assert.InRange(admin.TreeRequests.Count, 1, 2);
    }

    [Fact]
    public async Task The_tree_follows_the_managers_view_and_a_manager_lost_at_once()
    {
        AddAuthorization().SetAuthorized("rita").SetRoles("reader");
        var explorer = Render<Explorer>(p => p.Add(c => c.RefreshEvery, TimeSpan.Zero));
        explorer.WaitForAssertion(() => Assert.Contains("answered by manager-1", explorer.Find(".answered-by").TextContent));
        var reads = _admin.TreeRequests.Count;

        // The first message from the manager that answered the tree changes nothing; the same view again neither.
        var view = new Quintet.Protocol.Cluster.WatchManagersResponse { ViewId = 3, AnsweredBy = "manager-1", Managers = { FakeAdminApi.ManagerNames.Select(n => new Quintet.Protocol.Cluster.ViewManager { NodeName = n, Incarnation = 1 }) } };
        await _admin.ManagerViews.Writer.WriteAsync(view);
        await _admin.ManagerViews.Writer.WriteAsync(view.Clone());

        // manager-1 is lost: the watch moved on, and what manager-2 says is read again at once.
        _admin.AnsweredBy = "manager-2";
        var moved = view.Clone();
        moved.AnsweredBy = "manager-2";
        await _admin.ManagerViews.Writer.WriteAsync(moved);
        explorer.WaitForAssertion(() => Assert.Contains("answered by manager-2", explorer.Find(".answered-by").TextContent));
        Assert.Equal(reads + 1, _admin.TreeRequests.Count);

        // The cluster's view changes: read again.
        var smaller = moved.Clone();
        smaller.ViewId = 4;
        smaller.Managers.RemoveAt(0);
        await _admin.ManagerViews.Writer.WriteAsync(smaller);
        explorer.WaitForAssertion(() => Assert.Equal(reads + 2, _admin.TreeRequests.Count));
    }

    [Fact]
    public void A_tree_read_in_progress_shows_in_the_toolbar_and_nothing_is_added_above_the_tree()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("admin");
        var explorer = Render<Explorer>(p => p.Add(c => c.RefreshEvery, TimeSpan.Zero).Add(c => c.FollowManagers, false));
        explorer.WaitForAssertion(() => Assert.Contains("answered by manager-1", explorer.Find(".answered-by").TextContent));
        var before = ChildClasses(explorer);

        // The tree is read again (a refresh here; a change of the managers' view does the same), and the read hangs.
        _admin.HoldTree = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        explorer.Find("#refresh").Click();
        explorer.WaitForAssertion(() => Assert.Contains("Reading the cluster", explorer.Find(".explorer-tree > .toolbar .call-running").TextContent));
        Assert.Equal(before, ChildClasses(explorer));

        _admin.HoldTree.SetResult();
        explorer.WaitForAssertion(() => Assert.Empty(explorer.FindAll(".call-running")));
        Assert.Equal(before, ChildClasses(explorer));

        // What the tree's column holds, in order: a line appearing above the tree would move every node down.
        static List<string> ChildClasses(IRenderedComponent<Explorer> page) =>
            [.. page.Find(".explorer-tree").Children.Select(e => $"{e.TagName}.{e.ClassName}")];
    }

    [Fact]
    public async Task An_instance_list_read_again_shows_its_progress_in_its_header_and_nothing_above_its_rows()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("admin");
        var cut = Render<InstanceList>(p => p.Add(c => c.ClassName, "Bank.Account"));
        cut.WaitForAssertion(() => Assert.NotEmpty(cut.FindAll("tr[data-key]")));
        var before = ChildClasses(cut);

        // Read again, as after a migration, and the read hangs; the page renders meanwhile (the explorer's periodic
        // refresh renders the list with it).
        _admin.HoldTree = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var reload = cut.InvokeAsync(() => cut.Instance.ReloadAsync());
        cut.WaitForAssertion(() =>
        {
            cut.Render();
            Assert.Contains("Loading instances", cut.Find(".instance-list-header .call-running").TextContent);
        });
        Assert.Equal(before, ChildClasses(cut));

        _admin.HoldTree.SetResult();
        await reload;
        cut.WaitForAssertion(() => Assert.Empty(cut.FindAll(".call-running")));
        Assert.Equal(before, ChildClasses(cut));

        // What the list holds, in order: a line appearing above the rows would move every row down.
        static List<string> ChildClasses(IRenderedComponent<InstanceList> list) =>
            [.. list.Find(".instance-list").Children.Select(e => $"{e.TagName}.{e.ClassName}")];
    }

    [Fact]
    public void A_lifeline_names_its_slowest_step_and_lists_every_step()
    {
        var steps = new List<LifelineStep>
        {
            new() { Step = "received", Manager = "manager-2", AtMs = 0 },
            new() { Step = "forwarded", Manager = "manager-2", AtMs = 0.1 },
            new() { Step = "received", Manager = "manager-1", AtMs = 0.6 },
            new() { Step = "operation started", Manager = "manager-1", AtMs = 0.7 },
            new() { Step = "checkpoint written", Manager = "manager-1", AtMs = 3.2 },
            new() { Step = "answered", Manager = "manager-1", AtMs = 3.3 },
        };

        var lifeline = Render<Lifeline>(p => p.Add(c => c.Steps, steps));

        Assert.Contains("slowest: checkpoint written (+2.50 ms)", lifeline.Find(".lifeline-slowest").TextContent);
        Assert.Equal(6, lifeline.FindAll(".lifeline-steps tr").Count);
        Assert.Equal(2, lifeline.FindAll("line.lifeline-first").Count);
        Assert.Equal(4, lifeline.FindAll("line.lifeline-owner").Count);
        Assert.Contains("3.300 ms", lifeline.FindAll(".lifeline-steps tr")[^1].TextContent);
    }

    [Fact]
    public void An_operator_migrates_an_instance_by_dragging_it_onto_a_manager_after_confirming()
    {
        AddAuthorization().SetAuthorized("olga").SetRoles("operator");
        var explorer = Render<Explorer>(p => p.Add(c => c.RefreshEvery, TimeSpan.Zero).Add(c => c.FollowManagers, false));
        explorer.WaitForAssertion(() => explorer.Find("[data-node='Class:Bank.Account']").Click());
        explorer.WaitForAssertion(() => Assert.NotEmpty(explorer.FindAll("tr[data-key]")));

        // acct-00000 is on manager-1: a drop there is refused on the page; a drop on manager-2 asks first.
        var row = explorer.Find("tr[data-key='acct-00000']");
        Assert.Equal("true", row.GetAttribute("draggable"));
        row.TriggerEvent("ondragstart", new Microsoft.AspNetCore.Components.Web.DragEventArgs());
        explorer.Find("[data-node='Manager:manager-1']").TriggerEvent("ondrop", new Microsoft.AspNetCore.Components.Web.DragEventArgs());
        Assert.Contains("is on manager-1 already", explorer.Find(".call-error").TextContent);
        Assert.Empty(_admin.Actions);

        explorer.Find("tr[data-key='acct-00000']").TriggerEvent("ondragstart", new Microsoft.AspNetCore.Components.Web.DragEventArgs());
        explorer.Find("[data-node='Manager:manager-2']").TriggerEvent("ondrop", new Microsoft.AspNetCore.Components.Web.DragEventArgs());
        Assert.Contains("from manager-1 to manager-2?", explorer.Find(".drop-move").TextContent);
        Assert.Empty(_admin.Actions);
        explorer.Find("#drop-migrate-confirm").Click();
        explorer.WaitForAssertion(() => Assert.Contains("Moved Bank.Account/acct-00000 from manager-1 to manager-2", explorer.Find(".call-done").TextContent));
        Assert.Equal(["migrate acct-00000 manager-2"], _admin.Actions);

        // Cancelled: nothing moves.
        explorer.Find("tr[data-key='acct-00001']").TriggerEvent("ondragstart", new Microsoft.AspNetCore.Components.Web.DragEventArgs());
        explorer.Find("[data-node='Manager:manager-3']").TriggerEvent("ondrop", new Microsoft.AspNetCore.Components.Web.DragEventArgs());
        explorer.Find("#drop-migrate-cancel").Click();
        Assert.Empty(explorer.FindAll(".drop-move"));
        Assert.Single(_admin.Actions);
    }

    [Fact]
    public void A_reader_can_drag_no_instance()
    {
        AddAuthorization().SetAuthorized("rita").SetRoles("reader");
        var explorer = Render<Explorer>(p => p.Add(c => c.RefreshEvery, TimeSpan.Zero).Add(c => c.FollowManagers, false));
        explorer.WaitForAssertion(() => explorer.Find("[data-node='Class:Bank.Account']").Click());
        explorer.WaitForAssertion(() => Assert.NotEmpty(explorer.FindAll("tr[data-key]")));

        Assert.All(explorer.FindAll("tr[data-key]"), r => Assert.Null(r.GetAttribute("draggable")));
        Assert.Empty(explorer.FindAll(".drop-target"));
    }

    [Fact]
    public void A_reader_sees_no_action_buttons()
    {
        AddAuthorization().SetAuthorized("rita").SetRoles("reader");

        var instance = Render<InstanceDetails>(p => p.Add(c => c.Instance, FakeAdminApi.Instance(1)).Add(c => c.Managers, FakeAdminApi.ManagerNames));
        var package = Render<PackageDetails>(p => p.Add(c => c.Name, "Bank").Add(c => c.Package, FakeAdminApi.Bank));
        var qos = Render<QosEditor>(p => p.Add(c => c.ClassName, "Bank.Account"));
        var explorer = Render<Explorer>(p => p.Add(c => c.RefreshEvery, TimeSpan.Zero));

        instance.WaitForAssertion(() => Assert.Contains("42", instance.Markup));
        Assert.Empty(instance.FindAll("#migrate"));
        Assert.Empty(instance.FindAll("#retire"));
        Assert.Empty(package.FindAll("#undeploy"));
        qos.WaitForAssertion(() => Assert.Contains("replication: primary-backup", qos.Markup));
        Assert.Empty(qos.FindAll("#save-qos"));
        Assert.Empty(qos.FindAll("textarea"));
        explorer.WaitForAssertion(() => Assert.Contains("Cluster quintet", explorer.Markup));
        Assert.DoesNotContain("Deploy", explorer.FindAll("fluent-tab").Select(t => t.TextContent.Trim()));
        Assert.Empty(_admin.Actions);
    }

    [Fact]
    public void An_admin_sees_the_actions_a_reader_does_not()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("admin");

        var instance = Render<InstanceDetails>(p => p.Add(c => c.Instance, FakeAdminApi.Instance(1)).Add(c => c.Managers, FakeAdminApi.ManagerNames));
        var package = Render<PackageDetails>(p => p.Add(c => c.Name, "Bank").Add(c => c.Package, FakeAdminApi.Bank));
        var qos = Render<QosEditor>(p => p.Add(c => c.ClassName, "Bank.Account"));
        var explorer = Render<Explorer>(p => p.Add(c => c.RefreshEvery, TimeSpan.Zero));

        Assert.NotEmpty(instance.FindAll("#migrate"));
        Assert.NotEmpty(instance.FindAll("#retire"));
        Assert.NotEmpty(package.FindAll("#undeploy"));
        qos.WaitForAssertion(() => Assert.NotEmpty(qos.FindAll("#save-qos")));
        explorer.WaitForAssertion(() => Assert.Contains("Deploy", explorer.FindAll("fluent-tab").Select(t => t.GetAttribute("id") == "tab-deploy" ? "Deploy" : "")));
    }

    [Fact]
    public void An_operator_retires_an_instance_and_drains_a_manager_after_confirming()
    {
        AddAuthorization().SetAuthorized("olga").SetRoles("operator");
        var instance = Render<InstanceDetails>(p => p.Add(c => c.Instance, FakeAdminApi.Instance(1)).Add(c => c.Managers, FakeAdminApi.ManagerNames));
        var drain = Render<DrainPanel>(p => p.Add(c => c.Manager, "manager-2").Add(c => c.Owned, 3));

        instance.Find("#retire").Click();
        instance.WaitForAssertion(() => Assert.Contains("Retired on manager-1", instance.Markup));
        instance.Find("#reactivate").Click();
        instance.WaitForAssertion(() => Assert.Contains("Activated on manager-1", instance.Markup));
        _admin.Actions.Remove("reactivate acct-00001");
        drain.Find("#drain").Click();
        Assert.Equal(["retire acct-00001"], _admin.Actions);
        drain.Find("#drain-confirm").Click();
        drain.WaitForAssertion(() => Assert.Contains("Drained manager-2: 3 of 3 instances moved", drain.Find(".call-done").TextContent));
        Assert.Equal(["retire acct-00001", "drain manager-2"], _admin.Actions);
    }

    [Fact]
    public void Only_an_admin_sees_the_restart_of_a_manager_which_asks_first_and_follows_it_until_it_is_back()
    {
        var authorization = AddAuthorization().SetAuthorized("olga");
        authorization.SetRoles("operator");
        var hidden = Render<RestartPanel>(p => p.Add(c => c.Manager, "manager-2").Add(c => c.Owned, 7));
        Assert.Empty(hidden.FindAll("#restart"));

        authorization.SetAuthorized("ada").SetRoles("admin");
        var restarted = 0;
        var cut = Render<RestartPanel>(p => p
            .Add(c => c.Manager, "manager-2")
            .Add(c => c.Owned, 7)
            .Add(c => c.PollInterval, TimeSpan.FromMilliseconds(20))
            .Add(c => c.OnRestarted, () => restarted++));
        cut.Find("#restart").Click();
        Assert.Contains("move to the other managers first", cut.Find(".confirmation").TextContent);
        Assert.Empty(_admin.Actions);
        cut.Find("#restart-confirm").Click();
        cut.WaitForAssertion(() => Assert.Contains("manager-2 is back", cut.Find(".restart-status").TextContent), TimeSpan.FromSeconds(10));
        Assert.Contains("restart 1", cut.Find(".restart-status").TextContent);
        Assert.Equal(["restart manager-2"], _admin.Actions);

        // The page is told once the status shows it back (the status renders first).
        cut.WaitForAssertion(() => Assert.Equal(1, restarted));
    }

    [Fact]
    public void A_management_module_shows_its_view_to_a_reader_and_no_action()
    {
        AddAuthorization().SetAuthorized("rita").SetRoles("reader");
        var cut = Render<InstanceDetails>(p => p.Add(c => c.Instance, FakeAdminApi.Instance(1)).Add(c => c.Managers, FakeAdminApi.ManagerNames));

        cut.WaitForAssertion(() => Assert.Contains("balance", cut.Find(".management-result").TextContent));
        Assert.Contains("Account administration", cut.Find(".management-panel h4").TextContent);
        Assert.Contains("1234", cut.Find(".management-result").TextContent);
        Assert.Empty(cut.FindAll(".management-action"));
    }

    [Fact]
    public void An_operator_runs_an_action_of_the_management_module_after_confirming_and_a_bad_value_never_leaves_the_page()
    {
        AddAuthorization().SetAuthorized("olga").SetRoles("operator");
        var cut = Render<InstanceDetails>(p => p.Add(c => c.Instance, FakeAdminApi.Instance(1)).Add(c => c.Managers, FakeAdminApi.ManagerNames));
        cut.WaitForAssertion(() => Assert.Contains("1234", cut.Find(".management-result").TextContent));

        // The operator's action is offered; the admin's (Close) is not.
        var freeze = cut.Find(".management-action[data-operation=Freeze]");
        Assert.Empty(cut.FindAll(".management-action[data-operation=Close]"));

        // A value of the wrong kind is caught on the page: nothing is sent.
        freeze.QuerySelector("input[name=reason]")!.Change("fraud review");
        cut.Find(".management-action[data-operation=Freeze] input[name=days]").Change("three");
        cut.Find(".management-action[data-operation=Freeze] .management-run").Click();
        cut.Find(".management-action[data-operation=Freeze] .management-confirm").Click();
        cut.WaitForAssertion(() => Assert.Contains("days 'three' is not an integer", cut.Find(".management-action[data-operation=Freeze] .call-error").TextContent));
        Assert.Empty(_admin.Actions);

        // Asked first, then run with the form's values; the view shows what it changed.
        cut.Find(".management-action[data-operation=Freeze] input[name=days]").Change("3");
        cut.Find(".management-action[data-operation=Freeze] .management-run").Click();
        Assert.Contains("Freeze this account?", cut.Find(".confirmation").TextContent);
        Assert.Empty(_admin.Actions);
        cut.Find(".management-action[data-operation=Freeze] .management-confirm").Click();
        cut.WaitForAssertion(() => Assert.Contains("Freeze: done on manager-1", cut.Find(".management-action[data-operation=Freeze] .call-done").TextContent));
        Assert.Equal(["manage acct-00001 Freeze {\"reason\":\"fraud review\",\"days\":3}"], _admin.Actions);
        cut.WaitForAssertion(() => Assert.Contains("fraud review", cut.Find(".management-result").TextContent));
    }

    [Fact]
    public void A_package_page_shows_its_roles_members_and_an_admin_changes_only_those_edited()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("admin");
        var cut = Render<PackageDetails>(p => p.Add(c => c.Name, "Bank").Add(c => c.Package, FakeAdminApi.Bank));

        cut.WaitForAssertion(() => Assert.Equal(2, cut.FindAll(".package-roles input.role-members").Count));
        Assert.Equal("user:bob", cut.Find("tr[data-role=teller] input").GetAttribute("value"));
        cut.Find("tr[data-role=auditor] input").Change("user:ann, role:audit");
        cut.Find("#set-roles").Click();

        cut.WaitForAssertion(() => Assert.Contains("Set the members of 1 role.", cut.Find(".call-done").TextContent));
        Assert.Equal(["roles auditor"], _admin.Actions);
        Assert.Equal(["user:ann", "role:audit"], _admin.RoleMembers["auditor"]);
    }

    [Fact]
    public void A_reader_sees_a_packages_roles_members_and_cannot_change_them()
    {
        AddAuthorization().SetAuthorized("rita").SetRoles("reader");
        var cut = Render<PackageDetails>(p => p.Add(c => c.Name, "Bank").Add(c => c.Package, FakeAdminApi.Bank));

        cut.WaitForAssertion(() => Assert.Contains("user:bob", cut.Find("tr[data-role=teller]").TextContent));
        Assert.Contains("(none)", cut.Find("tr[data-role=auditor]").TextContent);
        Assert.Empty(cut.FindAll("input.role-members"));
        Assert.Empty(cut.FindAll("#set-roles"));
    }

    [Fact]
    public void A_refused_action_shows_the_status_and_the_managers_message()
    {
        AddAuthorization().SetAuthorized("olga").SetRoles("operator");
        _admin.ActionFailure = new RpcException(new Status(StatusCode.PermissionDenied, "'olga' may not call MigrateInstance: it needs the role operator or admin"));
        var cut = Render<InstanceDetails>(p => p.Add(c => c.Instance, FakeAdminApi.Instance(1)).Add(c => c.Managers, FakeAdminApi.ManagerNames));

        cut.Find("#migrate").Click();

        cut.WaitForAssertion(() => Assert.Contains("PERMISSION_DENIED: 'olga' may not call MigrateInstance", cut.Find(".call-error").TextContent));
        Assert.Equal(["migrate acct-00001 manager-1"], _admin.Actions);
    }

    [Fact]
    public void A_deployed_package_asks_for_its_roles_members()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("admin");
        var cut = Render<DeployPanel>();

        cut.InvokeAsync(() => cut.Instance.DeployAsync("Bank.zip", [1, 2, 3]));

        cut.WaitForAssertion(() => Assert.Single(cut.FindAll("input.role-members")));
        Assert.Contains("Deployed Bank 1.0.0", cut.Markup);
        Assert.Equal(["deploy"], _admin.Actions);
    }

    [Fact]
    public void An_unreachable_cluster_shows_why_in_the_explorer()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("admin");
        _admin.TreeFailure = new RpcException(new Status(StatusCode.Unavailable, "Error connecting to subchannel."));

        var cut = Render<Explorer>(p => p.Add(c => c.RefreshEvery, TimeSpan.Zero));

        cut.WaitForAssertion(() => Assert.Contains("Reading the cluster failed: UNAVAILABLE: no manager answered (Error connecting to subchannel.)", cut.Find(".call-error").TextContent));
    }

    [Fact]
    public void The_audit_page_lists_entries()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("admin");

        var cut = Render<AuditLog>();

        cut.WaitForAssertion(() => Assert.Contains("/quintet.admin.v1.ComponentAdmin/DeployPackage", cut.Markup));
    }

    [Fact]
    public async Task The_live_panel_shows_each_managers_figures_from_the_stream_with_a_sparkline_and_stops_watching_when_closed()
    {
        AddAuthorization().SetAuthorized("rita").SetRoles("reader");
        for (var tick = 0; tick < 3; tick++)
        {
            var statistics = new ClusterStatistics { AnsweredBy = "manager-1", Time = Google.Protobuf.WellKnownTypes.Timestamp.FromDateTime(new DateTime(2026, 11, 27, 7, 0, tick, DateTimeKind.Utc)) };
            statistics.Managers.Add(new ManagerStatistics { Manager = "manager-1", CallsPerSecond = 10 * (tick + 1), P50Ms = 0.75, P99Ms = 12.5, OwnedInstances = 4 });
            statistics.Managers.Add(new ManagerStatistics { Manager = "manager-2", CallsPerSecond = 2.5, P50Ms = 1.5, P99Ms = 3, OwnedInstances = 9 });
            statistics.Unanswered.Add("manager-3");
            _admin.Statistics.Add(statistics);
        }

        var cut = Render<LiveStatistics>();

        cut.WaitForAssertion(() => Assert.Equal("30.0", cut.Find("tr[data-manager='manager-1'] td.calls").TextContent), TimeSpan.FromSeconds(10));
        Assert.Equal("0.75", cut.Find("tr[data-manager='manager-1'] td.p50").TextContent);
        Assert.Equal("12.50", cut.Find("tr[data-manager='manager-1'] td.p99").TextContent);
        Assert.Equal("9", cut.Find("tr[data-manager='manager-2'] td.instances").TextContent);
        Assert.Contains("no answer", cut.Find("tr[data-manager='manager-3']").TextContent, StringComparison.Ordinal);

        // Three updates of 10, 20 and 30 calls/s: a rising line from the bottom to the top.
        var points = cut.Find("tr[data-manager='manager-1'] svg.sparkline polyline").GetAttribute("points")!.Split(' ');
        Assert.Equal(3, points.Length);
        Assert.Equal("120.0,1.0", points[^1]);
        Assert.Equal(1, _admin.WatchesOpened);

        await DisposeComponentsAsync();
        Assert.True(SpinWait.SpinUntil(() => _admin.WatchesClosed == 1, TimeSpan.FromSeconds(10)), "closing the panel did not end the stream");
    }

    private static InvocationEvent Invocation(int n) => new()
    {
        Manager = "manager-2",
        ClassName = "Bank.Account",
        Key = "acct-1",
        Record = new InvocationRecord { Operation = "Deposit", Request = $"Deposit {n}", Response = $"balance {n}", Status = n == 3 ? "FailedPrecondition: frozen" : "OK", ElapsedMs = 1.25, At = "2026-11-27T07:00:00.0000000+00:00", State = { new NamedValue { Name = "balance", Value = $"{n}.00" } } },
        Dropped = n == 3 ? 4 : 0,
    };

    [Fact]
    public async Task Live_invocations_stream_only_while_switched_on_newest_first_and_keep_the_last_200()
    {
        _admin.Invocations.AddRange(Enumerable.Range(1, 250).Select(Invocation));
        var cut = Render<LiveInvocations>(p => p.Add(c => c.ClassName, "Bank.Account").Add(c => c.Key, "acct-1"));
        Assert.Equal(0, _admin.InvocationWatchesOpened);

        cut.Find("input[type=checkbox]").Change(true);

        cut.WaitForAssertion(() => Assert.Contains("Deposit 250", cut.Find("table.invocations tbody tr").TextContent, StringComparison.Ordinal), TimeSpan.FromSeconds(10));
        var rows = cut.FindAll("table.invocations tbody tr");
        Assert.Equal(LiveInvocations.Capacity, rows.Count);
        Assert.Contains("Deposit 51", rows[^1].TextContent, StringComparison.Ordinal);
        Assert.Contains("balance 250.00", rows[0].TextContent, StringComparison.Ordinal);
        Assert.Contains("manager-2", rows[0].TextContent, StringComparison.Ordinal);
        Assert.Equal(("Bank.Account", "acct-1"), (_admin.LastInvocationWatch!.ClassName, _admin.LastInvocationWatch.Key));
        Assert.Contains("4 invocation(s) left out", cut.Find("p.dropped").TextContent, StringComparison.Ordinal);

        // Switched off: the stream ends, what came stays.
        cut.Find("input[type=checkbox]").Change(false);
        Assert.True(SpinWait.SpinUntil(() => _admin.InvocationWatchesClosed == 1, TimeSpan.FromSeconds(10)), "switching off did not end the stream");
        Assert.Equal(LiveInvocations.Capacity, cut.FindAll("table.invocations tbody tr").Count);

        // On again, then the page goes away: that ends it too.
        cut.Find("input[type=checkbox]").Change(true);
        Assert.True(SpinWait.SpinUntil(() => _admin.InvocationWatchesOpened == 2, TimeSpan.FromSeconds(10)));
        await DisposeComponentsAsync();
        Assert.True(SpinWait.SpinUntil(() => _admin.InvocationWatchesClosed == 2, TimeSpan.FromSeconds(10)), "closing the page did not end the stream");
    }

    [Fact]
    public void Live_invocations_of_a_class_with_debug_off_say_why_and_switch_off()
    {
        _admin.RefuseInvocations = new RpcException(new Status(StatusCode.FailedPrecondition, "Debug is off for Bank.Account: managers record its invocations only with debug: true in its QoS spec."));
        var cut = Render<LiveInvocations>(p => p.Add(c => c.ClassName, "Bank.Account"));

        cut.Find("input[type=checkbox]").Change(true);

        cut.WaitForAssertion(() => Assert.Contains("debug: true", cut.Find("p.call-error").TextContent, StringComparison.Ordinal), TimeSpan.FromSeconds(10));
        Assert.False(cut.Find("input[type=checkbox]").HasAttribute("checked"));
        Assert.Equal(1, _admin.InvocationWatchesClosed);
    }

    [Fact]
    public void An_instance_shows_the_live_toggle_only_when_its_class_has_debug_on()
    {
        AddAuthorization().SetAuthorized("alice").SetRoles("reader");
        var instance = new TreeInstance { ClassName = "Bank.Account", Key = "acct-1", Owner = "manager-2", OwnerInView = true, State = "active" };

        var off = Render<InstanceDetails>(p => p.Add(c => c.Instance, instance));
        Assert.Empty(off.FindAll("div.live-invocations"));

        var on = Render<InstanceDetails>(p => p.Add(c => c.Instance, instance).Add(c => c.Debug, true));
        Assert.Single(on.FindAll("div.live-invocations"));
        Assert.Equal(0, _admin.InvocationWatchesOpened);
    }
}
