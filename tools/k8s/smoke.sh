#!/usr/bin/env bash
# Starts etcd + kube-apiserver (+ kube-scheduler and kube-controller-manager)
# once on free 127.0.0.1 ports in a temp folder, with self-made certificates,
# checks /readyz with the admin client certificate, then stops everything.
#
# Usage: tools/k8s/smoke.sh            (builds via build.sh if the cache is cold)
#        KEEP=1 tools/k8s/smoke.sh     (keep the temp folder for inspection)
# Each step is written out as a plain command so that it can be turned into a
# pytest fixture; docs/development/testing.md lists the same commands.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
{ read -r K8S_BIN; read -r ETCD_BIN; } < <("$here/build.sh" k8s etcd)
[[ -x ${K8S_BIN:-}/kube-apiserver && -x ${ETCD_BIN:-}/etcd ]] || { echo "build.sh failed" >&2; exit 1; }

d=$(mktemp -d /tmp/octotrain-k8s.XXXXXX)
pids=()
cleanup() {
  local p t
  t=$(now)
  # stop in reverse order of start: controllers, then apiserver, then etcd
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    echo "stopped pid $p after $(since "$t") s"
  done
  if [[ -n ${KEEP:-} ]]; then echo "kept $d"; else rm -rf "$d"; fi
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }

# Free loopback ports: etcd client, etcd peer, apiserver, scheduler, controller-manager.
read -r ETCD_PORT PEER_PORT API_PORT SCHED_PORT KCM_PORT < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
for s in socks:
    s.close()
EOF
)
echo "ports: etcd=$ETCD_PORT peer=$PEER_PORT apiserver=$API_PORT scheduler=$SCHED_PORT kcm=$KCM_PORT"

# --- certificates -----------------------------------------------------------
pki=$d/pki
mkdir -p "$pki"
cd "$pki"
# CA
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout ca.key -out ca.crt \
  -subj "/CN=octotrain-test-ca" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
# apiserver serving cert
openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
  -subj "/CN=kube-apiserver" 2>/dev/null
printf '%s\n' \
  "basicConstraints=CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=serverAuth" \
  "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" \
  > apiserver.ext
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
  -extfile apiserver.ext -out apiserver.crt 2>/dev/null
# service-account key pair
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
openssl pkey -in sa.key -pubout -out sa.pub
# admin client cert (O=system:masters)
openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
  -subj "/O=system:masters/CN=octotrain-admin" 2>/dev/null
printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=clientAuth" > client.ext
openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
  -extfile client.ext -out admin.crt 2>/dev/null
cd "$d"

# kubeconfig for scheduler / controller-manager (admin identity, for the smoke test only)
cat > admin.kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $pki/ca.crt
users:
- name: admin
  user:
    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF

# --- etcd ---------------------------------------------------------------------
t0=$(now)
"$ETCD_BIN/etcd" \
  --name=octotrain-test \
  --data-dir="$d/etcd-data" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$PEER_PORT" \
  --initial-advertise-peer-urls="http://127.0.0.1:$PEER_PORT" \
  --initial-cluster="octotrain-test=http://127.0.0.1:$PEER_PORT" \
  --unsafe-no-fsync \
  > "$d/etcd.log" 2>&1 &
pids+=($!)
until curl -fsS "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1; do
  kill -0 "${pids[0]}" || { tail -20 "$d/etcd.log"; exit 1; }
  sleep 0.1
done
echo "etcd healthy after $(since "$t0") s"

# --- kube-apiserver -----------------------------------------------------------
t0=$(now)
"$K8S_BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 \
  --endpoint-reconciler-type=none \
  --secure-port="$API_PORT" \
  --tls-cert-file="$pki/apiserver.crt" \
  --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" \
  --service-account-issuer="https://127.0.0.1:$API_PORT" \
  --service-account-key-file="$pki/sa.pub" \
  --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=PodSecurity \
  --cert-dir="$d/apiserver-certs" \
  > "$d/kube-apiserver.log" 2>&1 &
api_pid=$!
pids+=($api_pid)
curl_admin=(curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key")
for _ in $(seq 1 1200); do
  if "${curl_admin[@]}" "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1; then break; fi
  kill -0 "$api_pid" || { tail -30 "$d/kube-apiserver.log"; exit 1; }
  sleep 0.1
done
echo "kube-apiserver /readyz ok after $(since "$t0") s: $("${curl_admin[@]}" "https://127.0.0.1:$API_PORT/readyz")"
"${curl_admin[@]}" "https://127.0.0.1:$API_PORT/version"
echo
"${curl_admin[@]}" "https://127.0.0.1:$API_PORT/api/v1/namespaces" | python3 -c \
  'import json,sys; print("namespaces:", [i["metadata"]["name"] for i in json.load(sys.stdin)["items"]])'
# without a client cert the request is anonymous and RBAC refuses it
echo "anonymous GET /api/v1/namespaces -> HTTP $(curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" "https://127.0.0.1:$API_PORT/api/v1/namespaces")"

# --- kube-scheduler and kube-controller-manager -------------------------------
t0=$(now)
"$K8S_BIN/kube-scheduler" \
  --kubeconfig="$d/admin.kubeconfig" \
  --authentication-kubeconfig="$d/admin.kubeconfig" \
  --authorization-kubeconfig="$d/admin.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$SCHED_PORT" \
  --cert-dir="$d/scheduler-certs" \
  --leader-elect=false \
  > "$d/kube-scheduler.log" 2>&1 &
pids+=($!)
"$K8S_BIN/kube-controller-manager" \
  --kubeconfig="$d/admin.kubeconfig" \
  --authentication-kubeconfig="$d/admin.kubeconfig" \
  --authorization-kubeconfig="$d/admin.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="$KCM_PORT" \
  --cert-dir="$d/kcm-certs" \
  --leader-elect=false \
  --service-account-private-key-file="$pki/sa.key" \
  --root-ca-file="$pki/ca.crt" \
  --use-service-account-credentials=true \
  --controllers='*,-nodeipam' \
  > "$d/kube-controller-manager.log" 2>&1 &
pids+=($!)
for name_port in kube-scheduler:$SCHED_PORT kube-controller-manager:$KCM_PORT; do
  for _ in $(seq 1 600); do
    curl -fsSk "https://127.0.0.1:${name_port#*:}/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "${name_port%%:*} /healthz: $(curl -sSk "https://127.0.0.1:${name_port#*:}/healthz" 2>&1) after $(since "$t0") s"
done
# the controller-manager creates the kube-root-ca.crt ConfigMap in each namespace
for _ in $(seq 1 100); do
  "${curl_admin[@]}" "https://127.0.0.1:$API_PORT/api/v1/namespaces/default/configmaps/kube-root-ca.crt" >/dev/null 2>&1 && break
  sleep 0.2
done
echo "default/kube-root-ca.crt (made by kube-controller-manager): HTTP $(curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$API_PORT/api/v1/namespaces/default/configmaps/kube-root-ca.crt")"
echo "smoke test passed"
