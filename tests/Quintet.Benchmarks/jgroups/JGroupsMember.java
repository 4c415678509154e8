import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.ReceiverAdapter;
import org.jgroups.View;

/**
 * One member of a JGroups group, the peer of Quintet's managers group in the multicast benchmark. It joins the group
 * named on its command line with the stack in the given file, says "ready" once the view holds every member, then
 * obeys lines on its standard input:
 *   run RATE BYTES   multicast BYTES-byte messages at RATE per second (1000000 or more: as fast as the stack accepts;
 *                    0: stop);
 *   mark             print "mark DELIVERED P50_US P99_US SAMPLES": messages delivered so far, and the latency of this
 *                    member's own messages (send to delivery back at this member) since the previous mark;
 *   quit             leave the group and exit.
 * Each message starts with the sender's index and its send time (System.nanoTime), so that a member times only its own
 * messages, on one clock.
 */
public final class JGroupsMember extends ReceiverAdapter {
    private static final int MaxSamples = 1 << 21;

    private final int index;
    private final AtomicLong delivered = new AtomicLong();
    private final Object samplesGate = new Object();
    private long[] samples = new long[MaxSamples];
    private int sampleCount;
    private volatile int viewSize;

    private final Object settingsGate = new Object();
    private double rate;
    private int bytes = 64;
    private long settingsVersion;

    private JGroupsMember(int index) {
        this.index = index;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: JGroupsMember STACK_XML GROUP MEMBERS INDEX");
            System.exit(2);
        }

        String stack = args[0];
        String group = args[1];
        int members = Integer.parseInt(args[2]);
        int index = Integer.parseInt(args[3]);
        JGroupsMember member = new JGroupsMember(index);
        JChannel channel = new JChannel(stack);
        channel.setReceiver(member);
        channel.connect(group);
        PrintStream out = System.out;

        long waitUntil = System.nanoTime() + 90_000_000_000L;
        while (member.viewSize < members) {
            if (System.nanoTime() > waitUntil) {
                System.err.println("the view holds " + member.viewSize + " members, not " + members + ", after 90 s");
                channel.close();
                System.exit(3);
            }
            Thread.sleep(20);
        }
        out.println("ready " + member.viewSize);
        out.flush();

        Thread sender = new Thread(() -> member.send(channel), "sender");
        sender.setDaemon(true);
        sender.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words[0].equals("run") && words.length == 3) {
                member.set(Double.parseDouble(words[1]), Integer.parseInt(words[2]));
            } else if (words[0].equals("mark")) {
                out.println(member.mark());
                out.flush();
            } else if (words[0].equals("quit")) {
                break;
            } else {
                System.err.println("unknown command: " + line);
            }
        }

        member.set(0, 64);
        channel.close();
        System.exit(0);
    }

    private void set(double rate, int bytes) {
        synchronized (settingsGate) {
            this.rate = rate;
            this.bytes = Math.max(16, bytes);
            settingsVersion++;
            settingsGate.notifyAll();
        }
    }

    /** Sends what the rate allows by now, then sleeps 2 ms: a steady rate without a timer per message. */
    private void send(JChannel channel) {
        long version = -1;
        double currentRate = 0;
        int currentBytes = 64;
        long started = 0;
        long issued = 0;
        try {
            while (true) {
                synchronized (settingsGate) {
                    while (rate <= 0) {
                        settingsGate.wait();
                    }
                    if (version != settingsVersion) {
                        version = settingsVersion;
                        currentRate = rate;
                        currentBytes = bytes;
                        started = System.nanoTime();
                        issued = 0;
                    }
                }

                long due = currentRate >= 1_000_000 ? issued + 256 : (long) ((System.nanoTime() - started) / 1e9 * currentRate);
                if (issued >= due) {
                    Thread.sleep(2);
                    continue;
                }

                while (issued < due) {
                    issued++;
                    // A fresh buffer per message: the stack keeps it until the message is stable, for retransmission.
                    byte[] payload = new byte[currentBytes];
                    ByteBuffer.wrap(payload).putLong(index).putLong(System.nanoTime());
                    channel.send(new Message(null, null, payload));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            System.err.println("send failed: " + e);
        }
    }

    @Override
    public void receive(Message message) {
        delivered.incrementAndGet();
        ByteBuffer payload = ByteBuffer.wrap(message.getRawBuffer(), message.getOffset(), message.getLength());
        if (payload.remaining() >= 16 && payload.getLong() == index) {
            long latency = System.nanoTime() - payload.getLong();
            synchronized (samplesGate) {
                if (sampleCount < samples.length) {
                    samples[sampleCount++] = latency;
                }
            }
        }
    }

    @Override
    public void viewAccepted(View view) {
        viewSize = view.size();
    }

    private String mark() {
        long[] taken;
        int count;
        synchronized (samplesGate) {
            taken = samples;
            count = sampleCount;
            samples = new long[MaxSamples];
            sampleCount = 0;
        }

        Arrays.sort(taken, 0, count);
        double p50 = count == 0 ? 0 : taken[(int) Math.min(count - 1, Math.floor(count * 0.50))] / 1000.0;
        double p99 = count == 0 ? 0 : taken[(int) Math.min(count - 1, Math.floor(count * 0.99))] / 1000.0;
        return String.format(java.util.Locale.ROOT, "mark %d %.1f %.1f %d", delivered.get(), p50, p99, count);
    }
}
