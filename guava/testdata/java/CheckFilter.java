// CheckFilter reads filters that another program wrote in BloomFilter.writeTo's format, with
// Guava's own BloomFilter.readFrom, and prints what Guava answers for them. java_test.go writes
// filters with package guava and compares these answers with Go's.
//
// Usage: java -cp guava.jar:DIR CheckFilter MANIFEST
//
// MANIFEST has one tab-separated instruction per line:
//
//	filter  PATH           read the stream in PATH (the probes below apply to it)
//	probe   string  HEX    mightContain of the UTF-8 string with these bytes (stringFunnel(UTF_8))
//	probe   long    N      mightContain(N) with Funnels.longFunnel()
//	probe   int     N      mightContain(N) with Funnels.integerFunnel()
//	probe   bytes   HEX    mightContain of these bytes with Funnels.byteArrayFunnel()
//
// For each filter it prints one line
//
//	filter PATH roundtrip=true|false approx=N|ArithmeticException fpp=BITS answers=0110...
//
// where roundtrip says whether writeTo gives back the exact bytes read, approx is
// approximateElementCount, fpp is expectedFpp as the hex of its IEEE-754 bits, and answers holds
// one digit per probe in manifest order.

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class CheckFilter {
  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: CheckFilter MANIFEST");
      System.exit(2);
    }
    List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
    Checked current = null;
    for (String line : lines) {
      if (line.isEmpty()) continue;
      String[] f = line.split("\t", -1);
      switch (f[0]) {
        case "filter":
          if (current != null) current.print();
          current = new Checked(f[1]);
          break;
        case "probe":
          current.probe(f[1], f[2]);
          break;
        default:
          throw new IllegalArgumentException("bad manifest line: " + line);
      }
    }
    if (current != null) current.print();
  }

  static final class Checked {
    final String path;
    final byte[] stream;
    final Map<String, BloomFilter<Object>> byFunnel = new HashMap<>();
    final StringBuilder answers = new StringBuilder();

    Checked(String path) throws IOException {
      this.path = path;
      this.stream = Files.readAllBytes(Paths.get(path));
    }

    // filter reads the stream with the given funnel; Guava ties a filter to one funnel type.
    @SuppressWarnings("unchecked")
    BloomFilter<Object> filter(String funnel) throws IOException {
      BloomFilter<Object> f = byFunnel.get(funnel);
      if (f == null) {
        Funnel<?> fn;
        switch (funnel) {
          case "string": fn = Funnels.stringFunnel(StandardCharsets.UTF_8); break;
          case "long": fn = Funnels.longFunnel(); break;
          case "int": fn = Funnels.integerFunnel(); break;
          case "bytes": fn = Funnels.byteArrayFunnel(); break;
          default: throw new IllegalArgumentException("unknown funnel " + funnel);
        }
        f = BloomFilter.readFrom(new ByteArrayInputStream(stream), (Funnel<Object>) fn);
        byFunnel.put(funnel, f);
      }
      return f;
    }

    void probe(String funnel, String value) throws IOException {
      Object item;
      switch (funnel) {
        case "string": item = new String(unhex(value), StandardCharsets.UTF_8); break;
        case "long": item = Long.parseLong(value); break;
        case "int": item = Integer.parseInt(value); break;
        default: item = unhex(value);
      }
      answers.append(filter(funnel).mightContain(item) ? '1' : '0');
    }

    void print() throws IOException {
      BloomFilter<Object> f = filter("bytes");
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      f.writeTo(out);
      String approx;
      try {
        approx = Long.toString(f.approximateElementCount());
      } catch (ArithmeticException e) {
        approx = "ArithmeticException";
      }
      System.out.printf("filter %s roundtrip=%b approx=%s fpp=%016x answers=%s%n", path,
          Arrays.equals(out.toByteArray(), stream), approx,
          Double.doubleToRawLongBits(f.expectedFpp()), answers);
    }
  }

  static byte[] unhex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }
}
