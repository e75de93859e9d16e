#!/bin/sh
# TLS (spec/design.md "TLS"): with --tls-cert, --tls-key and --tls-ca
# every connection is TLS 1.3 and both ends show a certificate of the
# cluster's CA, all made here with openssl.  A run with the cluster's
# certificate works, tensors and all; a peer without TLS, one whose CA is
# another, one whose certificate the cluster's CA did not sign, and TLS
# beside a cluster key are each refused with an error that says which,
# while the servers serve on.
. tests/integration/common.inc

cd "$T" || fail "no $T"
TFGC=$OLDPWD/$TFGC
[ -x "$TFGC" ] || TFGC=$(command -v "${TFGC##*/}")
mk() { # NAME CN CA: a key and a certificate signed by CA (self if none)
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null &&
	if [ -z "${3:-}" ]; then
		openssl x509 -req -in "$1.csr" -signkey "$1.key" -out "$1.pem" \
			-days 2 2>/dev/null
	else
		openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" \
			-CAcreateserial -out "$1.pem" -days 2 2>/dev/null
	fi || fail "openssl could not make $1"
}
mk ca "tfg test CA"
mk task "tfg task" ca
mk other "other CA"
mk intruder "intruder" other

cp "$OLDPWD/tests/integration/progs/double_sum.tfg" p.tfg
local_ports 2
tls="--tls-cert task.pem --tls-key task.key --tls-ca ca.pem"
opts="--startup-timeout 5 $tls $addrs"
serve 0 $opts
serve 1 $opts
wait_listen "$p0"
wait_listen "$p1"

expect_rc 0 $TFGC run --attach $opts p.tfg
[ "$(cat out)" = "6.0" ] || fail "TLS run printed '$(cat out)'"

# Each TLS record in a read of its own, as under load: the handshake's
# encrypted records are not taken for a peer without TLS (they were,
# half the time, each).  Four runs through a proxy that splits them.
pp=$(free_port)
python3 "$OLDPWD/tests/integration/progs/tls_split.py" "$pp" "$p1" 30 &
proxy=$!
_servers="$_servers $proxy"
wait_listen "$pp"
for i in 1 2 3 4; do
	expect_rc 0 $TFGC run --attach --startup-timeout 10 $tls \
		--addr /job:local/task:0=127.0.0.1:$p0 \
		--addr /job:local/task:1=127.0.0.1:$pp p.tfg
	[ "$(cat out)" = "6.0" ] || fail "split TLS run $i printed '$(cat out)'"
done
kill $proxy 2>/dev/null
if grep -q "does not run TLS" "$T/s1"; then
	fail "task 1 refused a TLS peer: $(cat "$T/s1")"
fi

# No TLS: the task tells it so, at once.
expect_rc 1 $TFGC run --attach --startup-timeout 20 $addrs p.tfg
expect_in err "it runs TLS, and this process not (give it --tls-cert, --tls-key, --tls-ca)"
# The run stops at the first refusal, which may be either task's: the
# other may see the connection closed before its first bytes.
for w in "refused a connection from 127.0.0.1:" \
	"it does not run TLS, this task does"; do
	grep -qF -- "$w" s0 s1 || fail "no task logged '$w': $(cat s0 s1)"
done
# Another CA on both sides: this end refuses the task's certificate.
expect_rc 1 $TFGC run --attach --startup-timeout 20 --tls-cert intruder.pem \
	--tls-key intruder.key --tls-ca other.pem $addrs p.tfg
expect_in err "its certificate: self-signed certificate in certificate chain"
# A certificate the cluster's CA did not sign: the task refuses it.
expect_rc 1 $TFGC run --attach --startup-timeout 20 --tls-cert intruder.pem \
	--tls-key intruder.key --tls-ca ca.pem $addrs p.tfg
expect_in err "unknown ca"
# TLS and a cluster key: one or the other.
head -c 32 /dev/urandom >key
expect_rc 1 $TFGC run --attach $opts --cluster-key key p.tfg
expect_in err "--cluster-key or TLS (--tls-cert, --tls-key, --tls-ca), not both"
# A key that is not the certificate's.
expect_rc 1 $TFGC run --attach --tls-cert task.pem --tls-key other.key \
	--tls-ca ca.pem $addrs p.tfg
expect_in err "--tls-key other.key: cannot read the key: "
expect_in err "key values mismatch"
# The servers serve on.
expect_rc 0 $TFGC run --attach $opts p.tfg
[ "$(cat out)" = "6.0" ] || fail "TLS run after the refusals printed '$(cat out)'"
expect_rc 0 $TFGC stop $opts p.tfg
wait $s0 $s1 || fail "a server failed: $(cat s0 s1)"
echo "tls: ok"
