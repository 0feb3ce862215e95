#!/bin/sh
# Regenerates the Guava fixtures in guava/testdata from the real Guava jar (Debian's libguava-java).
# Run from the guava directory (go generate does): sh testdata/java/gen.sh
set -eu
jar=${GUAVA_JAR:-/usr/share/java/guava.jar}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
javac -nowarn -cp "$jar" -d "$tmp" testdata/java/GenVectors.java
java -cp "$jar:$tmp" GenVectors testdata
