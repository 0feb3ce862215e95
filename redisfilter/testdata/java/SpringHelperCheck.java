import com.google.common.base.Preconditions;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import com.google.common.hash.Hashing;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The Java side of redisfilter's plain-layout test: the arithmetic of the Spring
 * BloomFilterHelper that Java services copy, driven against a real Redis with SETBIT and GETBIT,
 * as RedisTemplate.setBit and getBit send them.
 *
 * Usage: java SpringHelperCheck size                              (stdin: "n p" lines; prints "m k")
 *        java SpringHelperCheck offsets N P FUNNEL                 (stdin: items; prints "[o1 o2 ...]")
 *        java SpringHelperCheck add|check HOST PORT PASSWORD KEY N P FUNNEL   (stdin: one item per line)
 *
 * FUNNEL is "string" (putString(s, UTF_8)), "string2" (putString(s, UTF_8) twice, the frequent
 * copy-paste variant) or "long" (Funnels.longFunnel()). String items are given as hex of their
 * UTF-8 bytes (an empty line is the empty string), longs in decimal. "add" SETs each item's bits;
 * "check" prints 1 for an item whose bits are all set (the helper's includeByBloomFilter) and 0
 * otherwise. PASSWORD "-" means none.
 */
public class SpringHelperCheck {

    /** BloomFilterHelper as it is commonly copied: sizing and offsets, nothing else. */
    static final class BloomFilterHelper<T> {
        private final int numHashFunctions;
        private final int bitSize;
        private final Funnel<T> funnel;

        BloomFilterHelper(Funnel<T> funnel, int expectedInsertions, double fpp) {
            Preconditions.checkArgument(funnel != null, "funnel must not be null");
            this.funnel = funnel;
            bitSize = optimalNumOfBits(expectedInsertions, fpp);
            numHashFunctions = optimalNumOfHashFunctions(expectedInsertions, bitSize);
        }

        int[] murmurHashOffset(T value) {
            int[] offset = new int[numHashFunctions];
            long hash64 = Hashing.murmur3_128().hashObject(value, funnel).asLong();
            int hash1 = (int) hash64;
            int hash2 = (int) (hash64 >>> 32);
            for (int i = 1; i <= numHashFunctions; i++) {
                int nextHash = hash1 + i * hash2;
                if (nextHash < 0) {
                    nextHash = ~nextHash;
                }
                offset[i - 1] = nextHash % bitSize;
            }
            return offset;
        }

        private static int optimalNumOfBits(long n, double p) {
            if (p == 0) {
                p = Double.MIN_VALUE;
            }
            return (int) (-n * Math.log(p) / (Math.log(2) * Math.log(2)));
        }

        private static int optimalNumOfHashFunctions(long n, long m) {
            return Math.max(1, (int) Math.round((double) m / n * Math.log(2)));
        }
    }

    /** A minimal RESP client: enough for AUTH, SETBIT and GETBIT, pipelined. */
    static final class Resp implements AutoCloseable {
        private final Socket socket;
        private final OutputStream out;
        private final InputStream in;

        Resp(String host, int port) throws IOException {
            socket = new Socket(host, port);
            out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
            in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
        }

        void send(String... args) throws IOException {
            StringBuilder b = new StringBuilder();
            b.append('*').append(args.length).append("\r\n");
            for (String a : args) {
                byte[] raw = a.getBytes(StandardCharsets.UTF_8);
                b.append('$').append(raw.length).append("\r\n").append(a).append("\r\n");
            }
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
        }

        /** Reads one simple-string or integer reply; an error reply throws. */
        String reply() throws IOException {
            out.flush();
            StringBuilder b = new StringBuilder();
            int c;
            while ((c = in.read()) != '\n') {
                if (c < 0) throw new IOException("connection closed");
                if (c != '\r') b.append((char) c);
            }
            String line = b.toString();
            if (line.startsWith("-")) throw new IOException("redis: " + line.substring(1));
            return line.substring(1);
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream stdout = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        if (args[0].equals("size")) {
            for (String line; (line = stdin.readLine()) != null; ) {
                String[] f = line.trim().split("\\s+");
                BloomFilterHelper<Long> h = new BloomFilterHelper<>(Funnels.longFunnel(), Integer.parseInt(f[0]), Double.parseDouble(f[1]));
                stdout.println(h.bitSize + " " + h.numHashFunctions);
            }
            stdout.flush();
            return;
        }
        if (args[0].equals("offsets")) {
            args = new String[] {"offsets", "", "0", "-", "", args[1], args[2], args[3]};
        }
        String mode = args[0], host = args[1], password = args[3], key = args[4], funnelName = args[7];
        int port = Integer.parseInt(args[2]), n = Integer.parseInt(args[5]);
        double p = Double.parseDouble(args[6]);
        Funnel<?> funnel;
        switch (funnelName) {
            case "string":
                funnel = (Funnel<String>) (from, into) -> into.putString(from, StandardCharsets.UTF_8);
                break;
            case "string2":
                funnel = (Funnel<String>) (from, into) -> into.putString(from, StandardCharsets.UTF_8).putString(from, StandardCharsets.UTF_8);
                break;
            case "long":
                funnel = Funnels.longFunnel();
                break;
            default:
                throw new IllegalArgumentException("unknown funnel " + funnelName);
        }
        BloomFilterHelper<Object> helper = new BloomFilterHelper<>((Funnel<Object>) funnel, n, p);
        List<int[]> offsets = new ArrayList<>();
        for (String line; (line = stdin.readLine()) != null; ) {
            Object item = funnelName.equals("long") ? (Object) Long.parseLong(line.trim())
                    : new String(unhex(line.trim()), StandardCharsets.UTF_8);
            offsets.add(helper.murmurHashOffset(item));
        }
        if (mode.equals("offsets")) {
            for (int[] offs : offsets) {
                StringBuilder b = new StringBuilder("[");
                for (int i = 0; i < offs.length; i++) {
                    b.append(i > 0 ? " " : "").append(offs[i]);
                }
                stdout.println(b.append(']'));
            }
            stdout.flush();
            return;
        }
        try (Resp r = new Resp(host, port)) {
            if (!password.equals("-")) {
                r.send("AUTH", password);
                r.reply();
            }
            String cmd = mode.equals("add") ? "SETBIT" : "GETBIT";
            for (int[] offs : offsets) {
                for (int o : offs) {
                    if (mode.equals("add")) r.send(cmd, key, Integer.toString(o), "1");
                    else r.send(cmd, key, Integer.toString(o));
                }
            }
            for (int[] offs : offsets) {
                boolean all = true;
                for (int ignored : offs) {
                    all &= r.reply().equals("1");
                }
                if (mode.equals("check")) stdout.println(all ? "1" : "0");
            }
        }
        stdout.flush();
    }
}
