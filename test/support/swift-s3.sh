#!/bin/bash
# One-node OpenStack Swift + s3api on 127.0.0.1 for tests.   swift-s3.sh start|stop|config DIR [PORT]
# From shared/s3-test-store.md. `config` only writes DIR (configs, rings, the tempauth wrapper):
# test/support/s3.ts (startS3()) runs that and starts the servers itself, so they are its
# children and are reaped (here PID 1 reaps no orphans: what `start` leaves behind after `stop`
# stays as zombies until the machine goes).
# apt-get install -y --no-install-recommends swift-proxy swift-object swift-container swift-account [memcached]
# S3 creds: access key test:tester (or alias "tester", needed for Bun presign()), secret "testing".
# Ports: PORT (S3/proxy), PORT+10..12 (object/container/account), PORT+20 (memcached, if installed).
# Buckets: BUCKETS (space-separated, default "cubby"; BUCKETS= creates none). PIDs: DIR/run/*.pid.
# Uses the packaged /etc/swift/swift.conf (hash prefix) read-only; everything else lives in $D.
set -euo pipefail
CMD=${1:-start}; D=${2:?usage: swift-s3.sh start|stop|config DIR [PORT]}; PORT=${3:-18080}; PY=/usr/bin/python3
# A zombie (ended, not yet reaped: our servers' parent shell is gone) counts as stopped.
running() { [ -r /proc/$1/stat ] && ! grep -q '^[0-9]* (.*) Z ' /proc/$1/stat; }
stop() {
  local pids="" p f
  for f in "$D"/run/*.pid; do [ -e "$f" ] && pids="$pids $(cat "$f")"; rm -f "$f"; done
  [ -n "$pids" ] || return 0
  kill $pids 2>/dev/null || true
  for _ in $(seq 50); do for p in $pids; do running $p && { sleep 0.1; continue 2; }; done; return 0; done
  kill -9 $pids 2>/dev/null || true
}
case $CMD in start|stop|config) ;; *) echo "usage: swift-s3.sh start|stop|config DIR [PORT]" >&2; exit 2 ;; esac
stop; [ "$CMD" = stop ] && exit 0
rm -rf "$D"; mkdir -p "$D"/etc "$D"/srv/node/d1 "$D"/run "$D"/log "$D"/lib
$PY -c "import os,sys; p=sys.argv[1]+'/.x'; open(p,'w').close(); os.setxattr(p,'user.t',b'1'); os.unlink(p)" "$D"/srv/node/d1 \
  || { echo "filesystem under $D lacks user xattrs" >&2; exit 1; }
i=0
for s in object container account; do
  cat > "$D/etc/$s-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $((PORT + 10 + i))
workers = 0
user = $(id -un)
swift_dir = $D/etc
devices = $D/srv/node
mount_check = false
disable_fallocate = true
fallocate_reserve = 0
log_level = WARNING
[pipeline:main]
pipeline = $s-server
[app:$s-server]
use = egg:swift#$s
EOF
  i=$((i + 1))
done
$PY - "$D/etc" "$PORT" <<'PY'
import sys
from swift.common.ring import RingBuilder
for i, s in enumerate(('object', 'container', 'account')):
    b = RingBuilder(6, 1, 1)  # part_power 6, 1 replica, 1 device
    b.add_dev({'id': 0, 'region': 1, 'zone': 1, 'ip': '127.0.0.1',
               'port': int(sys.argv[2]) + 10 + i, 'device': 'd1', 'weight': 100})
    b.rebalance()
    b.get_ring().save('%s/%s.ring.gz' % (sys.argv[1], s))
PY
cat > "$D/etc/proxy-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $PORT
workers = 0
user = $(id -un)
swift_dir = $D/etc
log_level = WARNING
[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk s3api tempauth copy slo dlo proxy-logging proxy-server
[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
[filter:s3api]
use = egg:swift#s3api
location = us-east-1
# AWS's limit; s3api's default of 1000 parts refuses an upload past 1000 × 5 MiB (~4.9 GiB)
# (and [filter:slo] below allows as many segments)
max_upload_part_num = 10000
[filter:tempauth]
# tempauth + access-key aliases without ':' (Bun's presign() mis-signs keys containing ':')
paste.filter_factory = s3alias:filter_factory
user_test_tester = testing .admin
s3_key_aliases = tester=test:tester
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$((PORT + 20))
EOF
for f in catch_errors gatekeeper healthcheck proxy_logging listing_formats bulk copy slo dlo; do
  printf '[filter:%s]\nuse = egg:swift#%s\n' "${f/proxy_logging/proxy-logging}" "$f" >> "$D/etc/proxy-server.conf"
  # s3api completes a multipart upload as an SLO manifest: as many segments as parts (default 1000)
  if [ "$f" = slo ]; then echo "max_manifest_segments = 10000" >> "$D/etc/proxy-server.conf"; fi
done
cp "$(dirname "$0")/swift-s3alias.py" "$D/lib/s3alias.py"   # tempauth + colon-free key aliases
[ "$CMD" = config ] && exit 0
if command -v memcached >/dev/null; then   # optional; without it the proxy works but logs memcache errors
  memcached -l 127.0.0.1 -p $((PORT + 20)) -U 0 -m 32 -u "$(id -un)" > "$D/log/memcached.log" 2>&1 &
  echo $! > "$D/run/memcached.pid"
fi
for s in object container account proxy; do
  PYTHONPATH="$D/lib" nohup swift-$s-server "$D/etc/$s-server.conf" -v > "$D/log/$s.log" 2>&1 &
  echo $! > "$D/run/$s.pid"
done
up() { for p in $PORT $((PORT+10)) $((PORT+11)) $((PORT+12)); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || return 1; done; }
for _ in $(seq 150); do up && break; sleep 0.2; done
up || { echo "swift did not come up; see $D/log" >&2; tail -n 20 "$D"/log/*.log >&2; stop; exit 1; }
for b in ${BUCKETS-cubby}; do   # create buckets with an S3 SigV2-signed PUT (python stdlib only)
  $PY - "$PORT" "$b" <<'PY' || { stop; exit 1; }
import sys, hmac, hashlib, base64, email.utils, http.client
port, b = int(sys.argv[1]), sys.argv[2]
date = email.utils.formatdate(usegmt=True)
sig = base64.b64encode(hmac.new(b'testing', ('PUT\n\n\n%s\n/%s' % (date, b)).encode(), hashlib.sha1).digest()).decode()
c = http.client.HTTPConnection('127.0.0.1', port)
c.request('PUT', '/' + b, headers={'Date': date, 'Authorization': 'AWS test:tester:' + sig})
r = c.getresponse(); r.read()
sys.exit(0 if r.status == 200 else 'create bucket %s: HTTP %d' % (b, r.status))
PY
done
echo "swift s3api up on http://127.0.0.1:$PORT (buckets: ${BUCKETS-cubby})"
