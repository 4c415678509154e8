using System.Globalization;
using System.Text;
using System.Text.Json;
using Akka.Configuration;
using Quintet.Core.Serialization;

namespace Quintet.Core.Cluster;

/// <summary>Turns validated <see cref="ClusterOptions"/> into the Akka.NET configuration of a manager.</summary>
internal static class AkkaConfig
{
    /// <summary>The role every component manager carries in the cluster.</summary>
    public const string ManagerRole = "quintet-manager";

    /// <param name="options">The validated cluster options.</param>
    /// <param name="roles">This manager's cluster roles.</param>
    /// <param name="tls">Whether the cluster port uses mutual TLS; the certificate and the check of the peers' come
    /// with the actor system's <c>DotNettySslSetup</c> (see <see cref="ManagerTls"/>).</param>
    public static Config Build(ClusterOptions options, IReadOnlyCollection<string> roles, bool tls = false)
    {
        var fd = options.FailureDetector;
        var hocon = new StringBuilder();
        hocon.Append(CultureInfo.InvariantCulture, $$"""
            akka {
              loglevel = INFO
              stdout-loglevel = WARNING
              loggers = ["{{typeof(AkkaLoggerBridge).AssemblyQualifiedNameWithoutVersion()}}"]
              logger-startup-timeout = 10s
              actor {
                provider = cluster
                serializers {
                  quintet-wire = "{{typeof(WireSerializer).AssemblyQualifiedNameWithoutVersion()}}"
                }
                # Every protobuf message goes through the allowlisting serializer, which writes the
                # message's proto name, never a .NET type name, as its manifest.
                serialization-bindings {
                  "Google.Protobuf.IMessage, Google.Protobuf" = quintet-wire
                }
                serialization-identifiers {
                  "{{typeof(WireSerializer).AssemblyQualifiedNameWithoutVersion()}}" = {{WireSerializer.SerializerId}}
                }
              }
              remote {
                log-remote-lifecycle-events = off
                # Once a manager's connection fails (it died), nothing is sent to its address until the cluster has
                # removed it: the removal quarantines that incarnation and lifts the gate. A gate that opens earlier
                # lets peers reach a process restarted on the same address while they still address the incarnation
                # before it; Akka.NET's classic remoting can then lose every message between the two for good, so
                # the new incarnation never joins, or joins and is found unreachable and downed with a healthy peer.
                retry-gate-closed-for = {{Millis(GateAfterFailedConnection(options))}}
                dot-netty.tcp {
                  hostname = {{Quote(options.Host)}}
                  port = {{options.Port}}
                  # Group batches stay under 64 KB; a large application payload may not. Socket buffers stay at their
                  # defaults: larger ones would queue heartbeats behind megabytes of data.
                  maximum-frame-size = 4194304b
                  # Every write is flushed at once. The group already puts what one input produced for a manager into one
                  # message, and a total-order message waits for a round trip of acknowledgements: holding writes back for
                  # a batch added to every round trip (measured in docs/benchmarks.md: a command inside one instance at
                  # one writer p50 0.44 -> 0.34 ms, component sets at 32 writers +29%).
                  batching.enabled = false
                  # With TLS, addresses become akka.ssl.tcp://; a plaintext manager cannot reach a secured one.
                  enable-ssl = {{(tls ? "on" : "off")}}
                }
              }
              cluster {
                roles = [{{string.Join(", ", roles.Select(Quote))}}]
                seed-nodes = []
                log-info-verbose = off
                # A cluster of 3 to 16 managers can gossip often: membership changes (Up, Removed) then take a
                # fraction of a second instead of the 1 s ticks of Akka.NET's defaults, sized for large clusters.
                periodic-tasks-initial-delay = 200ms
                gossip-interval = 200ms
                leader-actions-interval = 200ms
                unreachable-nodes-reaper-interval = 250ms
                retry-unsuccessful-join-after = 2s
                # Every manager watches every other (up to 16), so that each one's own failure detector can suspect any
                # member of its groups; Akka.NET's default of 9 watchers suits large clusters.
                monitored-by-nr-of-members = 16
                # Heartbeats and gossip on threads of their own: a busy group or component cannot starve the failure
                # detector into suspecting healthy managers.
                use-dispatcher = akka.quintet-cluster-dispatcher
                run-coordinated-shutdown-when-down = on
                downing-provider-class = "Akka.Cluster.SBR.SplitBrainResolverProvider, Akka.Cluster"
                split-brain-resolver {
                  {{SplitBrainStrategy(options.Downing)}}
                  stable-after = {{Millis(options.Downing.StableAfter)}}
                }
                failure-detector {
                  heartbeat-interval = {{Millis(fd.HeartbeatInterval)}}
                  acceptable-heartbeat-pause = {{Millis(fd.AcceptableHeartbeatPause)}}
                  threshold = {{fd.Threshold.ToString("R", CultureInfo.InvariantCulture)}}
                }
              }
              quintet-cluster-dispatcher {
                type = ForkJoinDispatcher
                throughput = 5
                dedicated-thread-pool {
                  thread-count = 2
                }
              }
              # The host drives shutdown (SIGTERM, service stop); the CLR hook would race it.
              coordinated-shutdown {
                run-by-clr-shutdown-hook = off
                exit-clr = off
              }
            }
            """);
        return ConfigurationFactory.ParseString(hocon.ToString());
    }

    /// <summary>
    /// How long a failed address stays closed: longer than a dead manager takes to be removed (suspicion after the
    /// acceptable pause, then the resolver's stable-after), with room for the threshold and the removal's gossip.
    /// </summary>
    internal static TimeSpan GateAfterFailedConnection(ClusterOptions options) =>
        options.FailureDetector.AcceptableHeartbeatPause + options.Downing.StableAfter + RemovalMargin;

    // The threshold adds about 1.5 s to the pause, the resolver decides on its next tick, removal takes a round of
    // gossip: measured 6.2 s from kill -9 to removal on the defaults (2 s + 3 s), so 5 s leaves room on a loaded host.
    private static readonly TimeSpan RemovalMargin = TimeSpan.FromSeconds(5);

    // A fixed quorum cannot tie, and does not count a restarted manager that is still joining on one side only.
    private static string SplitBrainStrategy(DowningOptions downing) =>
        downing.Managers > 0
            ? $"active-strategy = static-quorum\n                  static-quorum {{ quorum-size = {downing.QuorumSize.ToString(CultureInfo.InvariantCulture)} }}"
            : "active-strategy = keep-majority";

    private static string Millis(TimeSpan value) =>
        ((long)Math.Ceiling(value.TotalMilliseconds)).ToString(CultureInfo.InvariantCulture) + "ms";

    /// <summary>A HOCON string literal: JSON's escaping, so no value can break out of its quotes.</summary>
    private static string Quote(string value) => JsonSerializer.Serialize(value);

    private static string AssemblyQualifiedNameWithoutVersion(this Type type) =>
        $"{type.FullName}, {type.Assembly.GetName().Name}";
}
