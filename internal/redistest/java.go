package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/skipped"
)

// JavaClasspath compiles the Java sources (paths relative to the test's directory) against
// Guava's jar and returns the classpath to run them with: the jar and the compiled classes. It
// needs java, javac and the jar (GUAVA_JAR, default Debian's /usr/share/java/guava.jar); when
// one is missing the test skips, naming it, unless BLOOM_REQUIRE_JAVA=1 (as in CI), when it
// fails. what names the test in that message.
func JavaClasspath(tb testing.TB, what string, sources ...string) string {
	tb.Helper()
	jar := os.Getenv("GUAVA_JAR")
	if jar == "" {
		jar = "/usr/share/java/guava.jar"
	}
	var missing []string
	for _, tool := range []string{"java", "javac"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := os.Stat(jar); err != nil {
		missing = append(missing, jar)
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s needs %s (apt-get install default-jdk-headless libguava-java)", what, strings.Join(missing, ", "))
		if os.Getenv("BLOOM_REQUIRE_JAVA") == "1" {
			tb.Fatal(msg + "; BLOOM_REQUIRE_JAVA=1 makes this a failure")
		}
		skipped.Missing(tb, strings.Join(missing, ", "), msg+"; set BLOOM_REQUIRE_JAVA=1 to make this a failure")
	}
	classes := tb.TempDir()
	args := append([]string{"-nowarn", "-cp", jar, "-d", classes}, sources...)
	if out, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
		tb.Fatalf("javac: %v\n%s", err, out)
	}
	return jar + string(os.PathListSeparator) + classes
}
