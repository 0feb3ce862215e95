// GenVectors writes the Guava fixtures of package guava: for each case, <case>.bin (the exact bytes
// of BloomFilter.writeTo) and <case>.txt (how the filter was made and every answer Guava gave),
// and sizing.tsv (what BloomFilter.create chooses, or refuses, for many (n, p) pairs).
//
// It uses only Guava's public API, so it runs against any Guava jar:
//
//	javac -cp /usr/share/java/guava.jar -d /tmp/gen GenVectors.java
//	java -cp /usr/share/java/guava.jar:/tmp/gen GenVectors OUTDIR
//
// The .txt format is described in ../README.md.

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;

public final class GenVectors {
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: GenVectors OUTDIR");
      System.exit(2);
    }
    Path out = Paths.get(args[0]);
    Files.createDirectories(out);
    for (int ordinal = 1; ordinal >= 0; ordinal--) {
      strings(out, ordinal);
      longs(out, ordinal);
      ints(out, ordinal);
    }
    edgeCases(out);
    sizing(out.resolve("sizing.tsv"));
  }

  static String mitz(int ordinal) {
    return ordinal == 1 ? "mitz64" : "mitz32";
  }

  // Strings cover every murmur3 tail length (0..15 bytes past each 16-byte block), multi-byte
  // UTF-8, astral characters (surrogate pairs in Java, 4 bytes in UTF-8), NUL and quoting.
  static final String ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN";
  static final String[] SPECIAL_PUTS = {
    "", "é", "naïve café", "日本語テキスト", "😀", "👩‍👩‍👧", "a\u0000b", "tab\there",
    "quote\"back\\slash", "line\nbreak", "\u007f\u0080\u07ff\u0800\uffff",
  };
  static final String[] SPECIAL_PROBES = {
    "key-", "KEY-0", "key-00", "key-0 ", " key-0", "e\u0301", "😁", "日本語", "a\u0000c", "\u0000",
  };

  static void strings(Path out, int ordinal) throws IOException {
    Case c = new Case(out, mitz(ordinal) + "_string_2000_p0.03", "string", ordinal, 2000, 0.03,
        "strings key-0..key-1999 and special strings");
    c.prefix("key-");
    c.putRange(0, 1999, 1);
    for (String s : SPECIAL_PUTS) c.put(s);
    for (int n = 1; n <= 40; n++) c.put(ALPHABET.substring(0, n));
    c.probeRange(2000, 9999, 1);
    for (String s : SPECIAL_PUTS) c.probe(s);
    for (String s : SPECIAL_PROBES) c.probe(s);
    for (int n = 41; n <= 50; n++) c.probe(ALPHABET.substring(0, n));
    c.finish();
  }

  static void longs(Path out, int ordinal) throws IOException {
    Case c = new Case(out, mitz(ordinal) + "_long_2000_p0.001", "long", ordinal, 2000, 0.001,
        "longs -1000..999 and extremes");
    c.putRange(-1000, 999, 1);
    long[] extremes = {
      Long.MIN_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE, Long.MAX_VALUE - 1, 1L << 32, -(1L << 32),
      Integer.MAX_VALUE, Integer.MIN_VALUE, 0x0123456789abcdefL, 0xfedcba9876543210L,
    };
    for (long v : extremes) c.put(v);
    c.probeRange(1000, 20999, 1);
    c.probeRange(-1_000_000_000_000_000L, 1_000_000_000_000_000L, 100_000_000_000_000L / 1000);
    for (long v : extremes) c.probe(v);
    c.probe(Long.MIN_VALUE + 2);
    c.probe(Long.MAX_VALUE - 2);
    c.probe(1L << 63 >>> 1);
    c.finish();
  }

  static void ints(Path out, int ordinal) throws IOException {
    Case c = new Case(out, mitz(ordinal) + "_int_1000_p0.01", "int", ordinal, 1000, 0.01,
        "ints -500..499 and extremes");
    c.putRange(-500, 499, 1);
    int[] extremes = {Integer.MIN_VALUE, Integer.MIN_VALUE + 1, Integer.MAX_VALUE, Integer.MAX_VALUE - 1, 1 << 16, -(1 << 16)};
    for (int v : extremes) c.put(v);
    c.probeRange(500, 9999, 1);
    c.probeRange(Integer.MIN_VALUE, Integer.MAX_VALUE, 1 << 20);
    for (int v : extremes) c.probe(v);
    c.finish();
  }

  static void edgeCases(Path out) throws IOException {
    // n = 0 is taken as 1; p = 0.5 then gives 1 bit (one word), k = 1. Nothing is added.
    Case c = new Case(out, "mitz64_empty_n0_p0.5", "string", 1, 0, 0.5, "nothing added");
    for (String s : SPECIAL_PUTS) c.probe(s);
    c.probe("key-0");
    c.finish();

    // A 64-bit filter with 3 hash functions holds only a few keys; 200 fill every bit, and
    // Guava's approximateElementCount then throws.
    c = new Case(out, "mitz64_saturated_n3_p0.1", "string", 1, 3, 0.1, "200 keys in 64 bits: saturated");
    c.prefix("s-");
    c.putRange(0, 199, 1);
    c.probeRange(200, 299, 1);
    c.probe("");
    c.finish();

    // The largest k the stream can hold (one unsigned byte).
    c = new Case(out, "mitz64_k255_n1_p1.5e-77", "string", 1, 1, 1.5e-77, "k = 255, the largest Guava allows");
    c.put("only");
    c.put("only");
    c.put("second");
    c.prefix("p-");
    c.probeRange(0, 999, 1);
    c.finish();

    c = new Case(out, "mitz32_tiny_n10_p0.1", "string", 0, 10, 0.1, "the legacy strategy in one word");
    c.prefix("tiny-");
    c.putRange(0, 9, 1);
    c.probeRange(10, 999, 1);
    c.finish();

    c = new Case(out, "mitz32_k255_n1_p1.5e-77", "long", 0, 1, 1.5e-77, "k = 255 under the legacy strategy");
    c.put(42L);
    c.probeRange(-500, 500, 1);
    c.finish();
  }

  // One fixture: a filter made by BloomFilter.create, the operations on it and Guava's answers.
  static final class Case {
    final Path out;
    final String name, funnelName;
    final Funnel<Object> funnel;
    final BloomFilter<Object> filter;
    final List<String> lines = new ArrayList<>();
    String prefix = "";

    @SuppressWarnings("unchecked")
    Case(Path out, String name, String funnelName, int ordinal, long n, double p, String what)
        throws IOException {
      this.out = out;
      this.name = name;
      this.funnelName = funnelName;
      switch (funnelName) {
        case "string": funnel = (Funnel<Object>) (Funnel<?>) Funnels.stringFunnel(StandardCharsets.UTF_8); break;
        case "long": funnel = (Funnel<Object>) (Funnel<?>) Funnels.longFunnel(); break;
        case "int": funnel = (Funnel<Object>) (Funnel<?>) Funnels.integerFunnel(); break;
        default: throw new IllegalArgumentException(funnelName);
      }
      BloomFilter<Object> f = BloomFilter.create(funnel, n, p);
      byte[] empty = bytes(f);
      if (ordinal != empty[0]) {
        // create() always picks MURMUR128_MITZ_64. Sizing does not depend on the strategy, so the
        // legacy filter of the same (n, p) is the same empty stream with ordinal 0, read back.
        empty[0] = (byte) ordinal;
        f = BloomFilter.readFrom(new ByteArrayInputStream(empty), funnel);
      }
      filter = f;
      lines.add("# " + name + ": " + what + ". Written by GenVectors.java with Guava "
          + guavaVersion() + "; see README.md.");
      lines.add("funnel\t" + funnelName);
      lines.add("strategy\t" + ordinal);
      lines.add("expected_insertions\t" + n);
      lines.add("fpp\t" + doubleBits(p) + "\t" + p);
      lines.add("num_hash_functions\t" + (empty[1] & 0xff));
      lines.add("data_length\t" + ((empty[2] & 0xff) << 24 | (empty[3] & 0xff) << 16 | (empty[4] & 0xff) << 8 | (empty[5] & 0xff)));
    }

    void prefix(String p) {
      prefix = p;
      lines.add("prefix\t" + quote(p));
    }

    Object item(long v) {
      switch (funnelName) {
        case "string": return prefix + v;
        case "int": return (int) v;
        default: return v;
      }
    }

    void putRange(long from, long to, long step) {
      List<Long> falses = new ArrayList<>();
      for (long v = from; ; v += step) {
        if (!filter.put(item(v))) falses.add(v);
        if (to - v < step) break;
      }
      lines.add("puts\t" + from + "\t" + to + "\t" + step + "\t" + join(falses));
    }

    void probeRange(long from, long to, long step) {
      List<Long> trues = new ArrayList<>();
      for (long v = from; ; v += step) {
        if (filter.mightContain(item(v))) trues.add(v);
        if (to - v < step) break;
      }
      lines.add("probes\t" + from + "\t" + to + "\t" + step + "\t" + join(trues));
    }

    void put(Object x) {
      lines.add("put\t" + literal(x) + "\t" + filter.put(x));
    }

    void probe(Object x) {
      lines.add("probe\t" + literal(x) + "\t" + filter.mightContain(x));
    }

    void finish() throws IOException {
      byte[] b = bytes(filter);
      long bitCount = 0;
      for (int i = 6; i < b.length; i++) bitCount += Integer.bitCount(b[i] & 0xff);
      lines.add("bit_count\t" + bitCount);
      String approx;
      try {
        approx = Long.toString(filter.approximateElementCount());
      } catch (ArithmeticException e) {
        approx = "ArithmeticException";
      }
      lines.add("approximate_element_count\t" + approx);
      double fpp = filter.expectedFpp();
      lines.add("expected_fpp\t" + doubleBits(fpp) + "\t" + fpp);
      Files.write(out.resolve(name + ".bin"), b);
      Files.write(out.resolve(name + ".txt"), lines, StandardCharsets.UTF_8);
    }
  }

  // sizing writes what BloomFilter.create(longFunnel(), n, p) chooses: k and the number of longs L,
  // read back from the writeTo header, or the exception it throws. Guava's sizing methods are not
  // public, so the header is the only public view of them.
  static void sizing(Path file) throws IOException {
    long[] ns = {0, 1, 2, 3, 5, 10, 33, 100, 1000, 12345, 100_000, 1_000_000};
    double[] ps = {0.9, 0.7, 0.62, 0.6, 0.5, 0.3, 0.1, 0.05, 0.03, 0.01, 1e-3, 1e-4, 1e-6, 1e-9,
      1e-15, 1e-30, 1e-76, 1e-77, 1e-100};
    List<String> lines = new ArrayList<>();
    lines.add("# BloomFilter.create(Funnels.longFunnel(), n, p) in Guava " + guavaVersion()
        + ": k and L (longs) from the writeTo header, or the exception (message / cause).");
    lines.add("# Written by GenVectors.java; see README.md.");
    lines.add("#n\tp_bits\tp\tresult");
    for (long n : ns) for (double p : ps) sizingRow(lines, n, p);
    // Sizes past Guava's limit of 2^31-1 longs, refused before anything is allocated.
    sizingRow(lines, 10_000_000_000L, 0.001);
    sizingRow(lines, 5_000_000_000L, 1e-6);
    sizingRow(lines, Long.MAX_VALUE, 0.5);
    // Rates outside (0, 1).
    sizingRow(lines, 100, 0.0);
    sizingRow(lines, 100, 1.0);
    sizingRow(lines, 100, -0.5);
    sizingRow(lines, 100, Double.NaN);
    Random rnd = new Random(20240611);
    for (int i = 0; i < 80; i++) {
      long n = rnd.nextInt(1 << (1 + rnd.nextInt(20)));
      double p = Math.pow(10, -12 * rnd.nextDouble());
      sizingRow(lines, n, p);
    }
    Files.write(file, lines, StandardCharsets.UTF_8);
  }

  static void sizingRow(List<String> lines, long n, double p) throws IOException {
    // create() allocates the array before it checks k; skip sizes this generator should not
    // allocate, except those Guava refuses before allocating (more than 2^31-1 longs).
    double bits = (n == 0 ? 1 : n) * -Math.log(p) / (Math.log(2) * Math.log(2));
    if (bits > 1 << 28 && bits / 64 <= Integer.MAX_VALUE) return;
    String result;
    try {
      byte[] h = new byte[6];
      BloomFilter.create(Funnels.longFunnel(), n, p).writeTo(new HeaderStream(h));
      int k = h[1] & 0xff;
      int l = (h[2] & 0xff) << 24 | (h[3] & 0xff) << 16 | (h[4] & 0xff) << 8 | (h[5] & 0xff);
      result = "ok\t" + k + "\t" + l;
    } catch (IllegalArgumentException e) {
      result = "error\t" + e.getMessage() + (e.getCause() == null ? "" : "\t" + e.getCause().getMessage());
    }
    lines.add(n + "\t" + doubleBits(p) + "\t" + p + "\t" + result);
  }

  // HeaderStream keeps the first bytes written to it and discards the rest.
  static final class HeaderStream extends OutputStream {
    final byte[] header;
    int n;

    HeaderStream(byte[] header) {
      this.header = header;
    }

    @Override
    public void write(int b) {
      if (n < header.length) header[n] = (byte) b;
      n++;
    }
  }

  static byte[] bytes(BloomFilter<?> f) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    f.writeTo(b);
    return b.toByteArray();
  }

  // guavaVersion reads the version from the jar's Maven metadata (Debian's jar keeps it).
  static String guavaVersion() {
    try (InputStream in = BloomFilter.class.getResourceAsStream(
        "/META-INF/maven/com.google.guava/guava/pom.properties")) {
      Properties p = new Properties();
      if (in != null) p.load(in);
      return p.getProperty("version", "(unknown version)");
    } catch (IOException e) {
      return "(unknown version)";
    }
  }

  static String doubleBits(double d) {
    return String.format("%016x", Double.doubleToRawLongBits(d));
  }

  static String join(List<Long> vs) {
    if (vs.isEmpty()) return "-";
    StringBuilder b = new StringBuilder();
    for (long v : vs) {
      if (b.length() > 0) b.append(',');
      b.append(v);
    }
    return b.toString();
  }

  static String literal(Object x) {
    return x instanceof String ? quote((String) x) : x.toString();
  }

  // quote writes s as a Go double-quoted string literal (strconv.Unquote reads it back): control
  // characters, quote and backslash escaped, everything else as UTF-8. Unpaired surrogates have
  // no UTF-8 form, so they are refused.
  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      i += Character.charCount(cp);
      if (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE) {
        throw new IllegalArgumentException("unpaired surrogate in " + s);
      }
      if (cp == '"' || cp == '\\') {
        b.append('\\').appendCodePoint(cp);
      } else if (cp < 0x20 || cp == 0x7f) {
        b.append(String.format("\\x%02x", cp));
      } else {
        b.appendCodePoint(cp);
      }
    }
    return b.append('"').toString();
  }
}
