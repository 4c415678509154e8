using Akka.Actor;
using Akka.Cluster;
using Google.Protobuf;
using Quintet.Core.Cluster;
using Quintet.Manager.Internal;

namespace Quintet.Manager.Diagnostics;

/// <summary>
/// The peer the multicast benchmark measures against: plain Akka.NET remoting between the same manager processes,
/// one-way, each manager to every other, with a window of unacknowledged messages per peer (as the group protocol has
/// its credit) so that neither side's memory grows without bound.
/// </summary>
internal sealed class RawRemotingWorkload(ClusterNode node) : BackgroundService
{
    private const string ActorName = "quintet-raw-probe";
    private const int AckEvery = 200;
    private const int Window = 2_000;

    private readonly Lock _gate = new();
    private IActorRef _probe = ActorRefs.Nobody;
    private (bool On, int PayloadBytes) _settings;
    private long _received;
    private long _sent;

    public long Received => Interlocked.Read(ref _received);

    public long Sent => Interlocked.Read(ref _sent);

    public void Set(bool on, int payloadBytes)
    {
        lock (_gate)
        {
            _settings = (on, payloadBytes);
        }
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        await node.Up.WaitAsync(stoppingToken);
        var acked = new Dictionary<Address, long>();
        _probe = node.System.ActorOf(Props.Create(() => new ProbeActor(this, acked)), ActorName);
        var sentTo = new Dictionary<Address, long>();
        var refs = new Dictionary<Address, IActorRef>();
        while (!stoppingToken.IsCancellationRequested)
        {
            (bool On, int PayloadBytes) settings;
            lock (_gate)
            {
                settings = _settings;
            }

            if (!settings.On)
            {
                await Task.Delay(50, stoppingToken);
                continue;
            }

            var payload = ByteString.CopyFrom(new byte[settings.PayloadBytes]);
            var peers = node.Cluster.State.Members
                .Where(m => m.Status == MemberStatus.Up && m.Address != node.SelfAddress)
                .Select(m => m.Address)
                .ToList();
            var progress = false;
            foreach (var peer in peers)
            {
                var sent = sentTo.GetValueOrDefault(peer);
                long ackedUpTo;
                lock (acked)
                {
                    ackedUpTo = acked.GetValueOrDefault(peer);
                }

                if (!refs.TryGetValue(peer, out var target))
                {
                    // Resolved once, as an application would hold a reference: no path lookup per message.
                    try
                    {
                        target = await node.System.ActorSelection(new RootActorPath(peer) / "user" / ActorName).ResolveOne(TimeSpan.FromSeconds(5), stoppingToken);
                        refs[peer] = target;
                    }
                    catch (ActorNotFoundException)
                    {
                        continue;
                    }
                }

                for (var i = 0; i < 500 && sent - ackedUpTo < Window; i++)
                {
                    target.Tell(new RawProbe { Seq = ++sent, Payload = payload }, _probe);
                    Interlocked.Increment(ref _sent);
                    progress = true;
                }

                sentTo[peer] = sent;
            }

            if (!progress)
            {
                await Task.Delay(1, stoppingToken);
            }
            else
            {
                await Task.Yield();
            }
        }
    }

    private sealed class ProbeActor : ReceiveActor
    {
        public ProbeActor(RawRemotingWorkload owner, Dictionary<Address, long> acked)
        {
            Receive<RawProbe>(probe =>
            {
                Interlocked.Increment(ref owner._received);
                if (probe.Seq % AckEvery == 0)
                {
                    Sender.Tell(new RawProbeAck { Seq = probe.Seq });
                }
            });
            Receive<RawProbeAck>(ack =>
            {
                lock (acked)
                {
                    var from = Sender.Path.Address;
                    acked[from] = Math.Max(acked.GetValueOrDefault(from), ack.Seq);
                }
            });
        }
    }
}
