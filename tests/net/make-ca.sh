#!/usr/bin/env bash
# tests/net/make-ca.sh — a throw-away certificate authority and one server
# certificate for the egress tests, made fresh for every run (nothing is
# trusted beyond the run's temp dir; no file of the host is read or written).
#
#   tests/net/make-ca.sh DIR
#
# Writes, all under DIR (created if missing):
#   DIR/ca/ca.pem              the CA certificate (mode 644: the sandbox reads it
#                              through a read-only --dir grant of DIR/ca)
#   DIR/private/ca.key         the CA key (mode 600; never granted)
#   DIR/private/server.key     the server key (mode 600; never granted)
#   DIR/private/server.pem     the server certificate, signed by the CA, for
#                              DNS:good.test, DNS:*.wild.test, DNS:*.corp.test,
#                              DNS:other.test, DNS:evil.test, DNS:bench.test,
#                              IP:127.0.0.2 (other.test and the denied
#                              secret.corp.test are deliberately in it: the
#                              proxy must refuse what the TLS layer would accept)
# Needs the openssl CLI (OpenSSL 3). Exit status non-zero on any failure.
set -euo pipefail

DIR=${1:?usage: make-ca.sh DIR}
mkdir -p "$DIR/ca" "$DIR/private"
chmod 755 "$DIR/ca"
chmod 700 "$DIR/private"
P=$DIR/private

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -sha256 \
    -subj "/CN=airlock egress test CA $$" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$P/ca.key" -out "$DIR/ca/ca.pem" 2>/dev/null

openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=good.test" \
    -keyout "$P/server.key" -out "$P/server.csr" 2>/dev/null

cat >"$P/server.ext" <<'EXT'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:good.test,DNS:*.wild.test,DNS:*.corp.test,DNS:other.test,DNS:evil.test,DNS:bench.test,IP:127.0.0.2
EXT

openssl x509 -req -in "$P/server.csr" -CA "$DIR/ca/ca.pem" -CAkey "$P/ca.key" \
    -CAserial "$P/ca.srl" -CAcreateserial -days 2 -sha256 -extfile "$P/server.ext" -out "$P/server.pem" 2>/dev/null

chmod 644 "$DIR/ca/ca.pem"
chmod 600 "$P/ca.key" "$P/server.key"
openssl verify -CAfile "$DIR/ca/ca.pem" "$P/server.pem" >/dev/null
