# The far end of `tcptune advise --ssh`, run by `sh -c` in one SSH session (no pty): it prints
# what it finds of its machine as tagged lines (src/remote/script.rs reads them, line by line),
# then starts one peer for the path test and ends when the session's stdin closes (or after
# LIFE seconds), leaving no process and no file behind.
#
# Sent as one line inside single quotes, which every login shell (sh, bash, zsh, ksh, fish,
# csh) hands on to sh as it is: so no single quote and no backslash anywhere below (and `!`
# only in `$!`: no shell expands history when it runs a command), and every line ends where a
# shell may go on (tests in script.rs check this, and that sh parses the joined line).
#
# Arguments: LIFE WANT IPERF KEY...
#   LIFE   seconds a process started here may live at most, however the session goes
#   WANT   tcptune: tcptune peer of this version (V:), else iperf3 -s where IPERF allows,
#          else a copy of the near end tcptune; iperf3: iperf3 -s only; none: the facts
#          only; evidence: the test end of `tcptune mesh`, below
#   IPERF  1: the near end allows an iperf3 server here and has its client
#   KEY    L:net/ipv4/tcp_rmem (Linux, the file under /proc/sys), F:kern.ipc.maxsockbuf
#          (FreeBSD, sysctl -n), M:net.inet.tcp.autorcvbufmax (macOS, sysctl -n)
#          V:VERSION the tcptune that must run here (else a copy is asked for); B:ADDR the
#          address the near end connects to (a peer listens there, else on the address ssh
#          reached); with WANT evidence: A:ADDR the peer, P:PORT its port, T:MS the
#          longest test, ms (0: advise's own)
life=$1; want=$2; iperf=$3; shift 3;
# Background jobs of a non-interactive shell read /dev/null: the watcher reads the session
# through fd 3.
exec 3<&0;
nl=$(echo; echo x); nl=${nl%x};
d=; srv=; c=;
say() { printf "%s$nl" "$*"; };
bye() { kill $srv $c 2>/dev/null; if [ -n "$d" ]; then rm -rf "$d"; fi; };
trap bye EXIT;
trap "exit 129" HUP INT TERM PIPE;
# Holds the process $1 until it ends, the session's stdin closes (the reader wakes this shell:
# then up is empty) or LIFE passes, then stops it; s is its exit status. Every process this
# script starts is one it waits for or kills. With a log $2: each time the server says there
# that it listens again (iperf3 closes and reopens its port after every connection), "ready N"
# says so: a connection made before that is reset.
wake() { up=; };
hold() {
  srv=$1; up=1; t=0; s=0;
  trap wake USR1;
  ( cat <&3 >/dev/null 2>&1; kill -s USR1 $$ ) >/dev/null 2>&1 &
  c=$!;
  r=1;
  while [ -n "$up" ] && kill -0 $srv 2>/dev/null && [ $t -lt $((life * 10)) ]; do
    if [ -n "$2" ]; then
      k=$(grep -c listening "$2" 2>/dev/null);
      if [ "${k:-0}" -gt $r ]; then r=$k; say "ready $r"; fi;
    fi;
    sleep 0.1; t=$((t+1));
  done;
  if kill -0 $srv 2>/dev/null; then
    kill $srv 2>/dev/null; n=0;
    while kill -0 $srv 2>/dev/null && [ $n -lt 10 ]; do sleep 0.1; n=$((n+1)); done;
    kill -9 $srv 2>/dev/null; wait $srv 2>/dev/null;
  else wait $srv 2>/dev/null; s=$?; fi;
  kill $c 2>/dev/null;
  srv=; c=;
};
# Waits up to 3 s for the server $1 to write $2 into $3; true while it runs.
started() {
  n=0;
  while [ $n -lt 60 ]; do
    if grep -q "$2" "$3" 2>/dev/null; then break; fi;
    if kill -0 $1 2>/dev/null; then sleep 0.05; n=$((n+1)); else break; fi;
  done;
  kill -0 $1 2>/dev/null;
};
tmp() { if [ -z "$d" ]; then d=$(mktemp -d "${TMPDIR:-/tmp}/tcptune.XXXXXXXX") && chmod 700 "$d"; fi; };
say "tcptune-far 1";
os=$(uname -s);
say "uname $os $(uname -m)";
say "release $(uname -r)";
say "page $(getconf PAGESIZE 2>/dev/null)";
say "uid $(id -u)";
case $os in
Linux)
  while read -r k v u; do if [ "$k" = MemTotal: ]; then say "ramkb $v"; fi; done </proc/meminfo;
  if [ -d /sys/module/sch_fq ]; then say "fq 1"; else say "fq 0"; fi;
  say "netns-self $(readlink /proc/self/ns/net 2>/dev/null)";
  say "netns-init $(readlink /proc/1/ns/net 2>/dev/null)";
  # This host as the far end sees it (the ssh client address) and its route back to it.
  cl=${SSH_CONNECTION%% *};
  if [ -n "$cl" ]; then
    say "client $cl";
    r=$(ip route get "$cl" 2>/dev/null || /sbin/ip route get "$cl" 2>/dev/null);
    say "route-get ${r%%$nl*}";
    m=$(ip route get fibmatch "$cl" 2>/dev/null || /sbin/ip route get fibmatch "$cl" 2>/dev/null);
    say "route-match ${m%%$nl*}";
  fi;;
FreeBSD) say "ram $(sysctl -n hw.physmem 2>/dev/null)";;
Darwin) say "ram $(sysctl -n hw.memsize 2>/dev/null)";;
esac;
# A value is its key line, then one "= " line per line of it.
for a in "$@"; do
  k=${a#?:};
  case $os:$a in
  Linux:L:*)
    p=/proc/sys/$k;
    if [ -e "$p" ]; then
      m=$(ls -ln "$p" 2>/dev/null); m=${m%% *};
      if v=$(cat "$p" 2>/dev/null); then
        say "key $k $m";
        say "$v" | while IFS= read -r l; do say "= $l"; done;
      else say "key $k unreadable"; fi;
    else say "key $k absent"; fi;;
  FreeBSD:F:*|Darwin:M:*)
    if v=$(sysctl -n "$k" 2>/dev/null); then
      say "key $k -";
      say "$v" | while IFS= read -r l; do say "= $l"; done;
    else say "key $k absent"; fi;;
  esac;
done;
if [ "$want" = none ]; then say "peer none"; exit 0; fi;
th=; tb=; tp=; tv=; tt=;
for a in "$@"; do
  case $a in
  A:*) th=${a#A:};; B:*) tb=${a#B:};; P:*) tp=${a#P:};; V:*) tv=${a#V:};; T:*) tt=${a#T:};;
  esac;
done;
# The address ssh reached this host on (SSH_CONNECTION: client, its port, this end, port).
third() { echo "$3"; };
sv=$(third $SSH_CONNECTION);
if [ -n "$(echo "$sv" | tr -d 0-9a-fA-F.:)" ]; then sv=; fi;
# t: the tcptune of this version here, if there is one.
this() {
  t=$(command -v tcptune 2>/dev/null);
  if [ -n "$t" ] && [ "$("$t" --version 2>/dev/null)" = "tcptune $tv" ]; then :; else t=; fi;
};
# A copy of the near end tcptune, if it sends one: a size line, then the bytes. Sets t.
fetch() {
  t=;
  say "need-binary";
  IFS= read -r n || exit 0;
  if [ "$n" -gt 0 ] 2>/dev/null && tmp; then :; else exit 0; fi;
  head -c "$n" >"$d/tcptune";
  if [ "$(( $(wc -c <"$d/tcptune") ))" -eq "$n" ]; then :; else say "fail the copy arrived short"; exit 0; fi;
  chmod 700 "$d/tcptune";
  if "$d/tcptune" --version >/dev/null 2>&1; then :; else say "fail the copied tcptune does not run there"; exit 0; fi;
  t=$d/tcptune;
};
# The other end of a mesh's test (A:ADDR): the route this host uses toward it, as its kernel
# says — the peer's toward the test end, the test end's toward the peer.
# The test end of a mesh: this tcptune (the near end version, else a copy) measures the path to the peer at ADDR:PORT
# and prints its evidence as JSON, each line of it as "= LINE", each line of its stderr as
# "- LINE", then "end STATUS". It ends with the session (its stdin), as this script does.
if [ -n "$th" ] && [ "$os" = Linux ]; then
  r=$(ip route get "$th" 2>/dev/null || /sbin/ip route get "$th" 2>/dev/null);
  say "peer-route-get ${r%%$nl*}";
  m=$(ip route get fibmatch "$th" 2>/dev/null || /sbin/ip route get fibmatch "$th" 2>/dev/null);
  say "peer-route-match ${m%%$nl*}";
fi;
if [ "$want" = evidence ]; then
  this;
  if [ -z "$t" ]; then fetch; fi;
  tmp || exit 0;
  sc=;
  if [ "${tt:-0}" -gt 0 ] 2>/dev/null; then sc="--test-time ${tt}ms"; fi;
  say "evidence start";
  "$t" evidence --host "$th" --test-port "$tp" --lifetime "${life}s" $sc <&3 >"$d/out" 2>"$d/err" &
  hold $! "";
  if [ -z "$up" ]; then exit 0; fi;
  while IFS= read -r l || [ -n "$l" ]; do say "= $l"; done <"$d/out";
  while IFS= read -r l || [ -n "$l" ]; do say "- $l"; done <"$d/err";
  say "end $s";
  exit 0;
fi;
# The addresses a peer listens on: the one the near end connects to, else the one ssh reached.
bs=;
if [ -n "$tb" ]; then bs="--bind $tb"; fi;
if [ -n "$sv" ]; then bs="$bs --bind $sv"; fi;
# 1. tcptune peer of this version, which ends by itself at the session's end (stdin EOF), after
# its one test or after LIFE seconds; held as a server is.
peer() {
  say "peer tcptune";
  "$t" peer --lifetime "${life}s" $bs <&3 &
  hold $! "";
  if [ -n "$up" ]; then say "end $s"; fi;
  exit 0;
};
t=;
if [ "$want" = tcptune ]; then this; fi;
if [ -n "$t" ]; then peer; fi;
# 2. iperf3 -s on the first free port of these, on the address the near end connects to (else
# the one ssh reached), where the near end allows it.
if [ "$iperf" = 1 ] && command -v iperf3 >/dev/null 2>&1 && tmp; then
  for a in "$tb" "$sv"; do
    if [ -n "$a" ]; then
      for p in 5201 5202 5203 5204 5205 5206 5207 5208; do
        iperf3 -s -p $p -B "$a" --forceflush >"$d/iperf3.log" 2>&1 </dev/null &
        s=$!;
        if started $s listening "$d/iperf3.log"; then say "peer iperf3 $p"; hold $s "$d/iperf3.log"; say "end 0"; exit 0; fi;
        wait $s 2>/dev/null;
      done;
    fi;
  done;
fi;
if [ "$want" = iperf3 ]; then say "fail no iperf3 server could start"; exit 0; fi;
# 3. A copy of the near end tcptune.
fetch;
if "$t" peer --help >/dev/null 2>&1; then peer; fi;
say "fail the copied tcptune has no peer subcommand";
