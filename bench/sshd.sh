# Sourced by bench/wan.sh and bench/example-ssh.sh.
#
# lab_sshd DIR NS ADDR BIN: an sshd in network namespace NS on ADDR:2222 that lets this host in
# with a key made in DIR, and whose sessions find BIN as `tcptune` on their PATH (for `advise
# --ssh`). Writes DIR/config (its Host `far`, for `ssh -F`) and DIR/sshd.pid; keys made once
# per DIR. Returns non-zero when the sshd did not start.
lab_sshd() {
	local d=$1 ns=$2 addr=$3 bin=$4
	mkdir -p "$d/bin" /run/sshd
	[[ -f $d/host ]] || {
		ssh-keygen -q -t ed25519 -N '' -f "$d/host"
		ssh-keygen -q -t ed25519 -N '' -f "$d/id"
		cp "$d/id.pub" "$d/authorized_keys"
		ln -sf "$bin" "$d/bin/tcptune"
	}
	rm -f "$d/sshd.pid"
	echo "[$addr]:2222 $(cat "$d/host.pub")" >"$d/known_hosts"
	printf 'Host far\n  HostName %s\n  Port 2222\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n' \
		"$addr" "$d/id" "$d/known_hosts" >"$d/config"
	ip netns exec "$ns" /usr/sbin/sshd -f /dev/null -h "$d/host" -o "ListenAddress=$addr:2222" \
		-o "AuthorizedKeysFile=$d/authorized_keys" -o StrictModes=no -o UsePAM=no -o "PidFile=$d/sshd.pid" \
		-o "SetEnv=PATH=$d/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _ in $(seq 50); do [[ -s $d/sshd.pid ]] && break; sleep 0.1; done
	[[ -s $d/sshd.pid ]] || { echo "sshd did not start in $ns" >&2; return 1; }
}
