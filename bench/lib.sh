# Shared by the scripts in bench/ that start servers (source it, don't run it): a scratch
# directory $tmp, removed at exit together with every process whose pid is added to pids, and
# freeport, which prints a loopback TCP port that nothing listens on now.
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
freeport() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
