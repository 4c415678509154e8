using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Hosting.Systemd;
using Quintet.Manager.Lifetime;

namespace Quintet.Manager.Tests.Lifetime;

public class ManagerRestartsTests
{
    [Fact]
    public void One_restart_is_accepted_per_run_and_counted_once_the_run_stopped_for_it()
    {
        var restarts = new ManagerRestarts(inProcess: true);
        Assert.True(restarts.TryAccept());
        Assert.True(restarts.UnderWay);
        Assert.False(restarts.TryAccept());
        Assert.False(restarts.Requested);

        restarts.Request();
        Assert.True(restarts.Requested);
        Assert.True(restarts.Take());
        Assert.Equal(1, restarts.Count);
        Assert.False(restarts.Requested);

        // The next run accepts a restart of its own.
        Assert.False(restarts.UnderWay);
        Assert.True(restarts.TryAccept());
    }

    [Fact]
    public void A_run_that_stopped_for_another_reason_is_not_restarted()
    {
        var restarts = new ManagerRestarts(inProcess: true);
        Assert.True(restarts.TryAccept());
        Assert.False(restarts.Take());
        Assert.Equal(0, restarts.Count);
    }

    [Fact]
    public void Ports_left_to_the_system_are_kept_for_the_next_run_and_configured_ones_are_not_touched()
    {
        var configuration = new ConfigurationBuilder()
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Quintet:Manager:GrpcPort"] = "0", ["Quintet:Cluster:Port"] = "4053" })
            .Build();
        var restarts = new ManagerRestarts(inProcess: true);

        restarts.PinIfAny(configuration, "Quintet:Manager:GrpcPort", 41234);
        restarts.PinIfAny(configuration, "Quintet:Cluster:Port", 4053);

        Assert.Equal(new Dictionary<string, string?> { ["Quintet:Manager:GrpcPort"] = "41234" }, restarts.Carried);
    }

    [Fact]
    public void The_managers_seen_up_are_seeds_of_the_next_run_after_the_configured_ones()
    {
        var configuration = new ConfigurationBuilder()
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Quintet:Cluster:Seeds:0"] = "127.0.0.1:4053" })
            .Build();
        var restarts = new ManagerRestarts(inProcess: true);

        restarts.AddSeeds(configuration, "Quintet:Cluster:Seeds", ["akka.tcp://quintet@127.0.0.1:4054", "akka.tcp://quintet@127.0.0.1:4055"]);

        var next = new ConfigurationBuilder().AddConfiguration(configuration).AddInMemoryCollection(restarts.Carried).Build();
        Assert.Equal(["127.0.0.1:4053", "akka.tcp://quintet@127.0.0.1:4054", "akka.tcp://quintet@127.0.0.1:4055"], next.GetSection("Quintet:Cluster:Seeds").Get<string[]>()!);

        // The next restart replaces the seeds it carried with the managers seen then.
        restarts.AddSeeds(next, "Quintet:Cluster:Seeds", ["akka.tcp://quintet@127.0.0.1:4056"]);
        var third = new ConfigurationBuilder().AddConfiguration(configuration).AddInMemoryCollection(restarts.Carried).Build();
        Assert.Equal(["127.0.0.1:4053", "akka.tcp://quintet@127.0.0.1:4056"], third.GetSection("Quintet:Cluster:Seeds").Get<string[]>()!);
    }

    [Fact]
    public void Systemd_hears_of_a_restart_as_a_reload_and_of_a_stop_as_a_stop()
    {
        var restarts = new ManagerRestarts(inProcess: true);
        var sent = new RecordingNotifier();
        var notifier = new RestartAwareSystemdNotifier(sent, restarts);

        notifier.Notify(ServiceState.Ready);
        notifier.Notify(ServiceState.Stopping);
        restarts.Request();
        notifier.Notify(ServiceState.Stopping);

        Assert.Equal("READY=1", sent.States[0]);
        Assert.Equal("STOPPING=1", sent.States[1]);
        Assert.StartsWith("RELOADING=1\nMONOTONIC_USEC=", sent.States[2], StringComparison.Ordinal);
        Assert.Equal(3, sent.States.Count);
    }

    private sealed class RecordingNotifier : ISystemdNotifier
    {
        public List<string> States { get; } = [];

        public bool IsEnabled => true;

        public void Notify(ServiceState state) => States.Add(state.ToString());
    }
}
