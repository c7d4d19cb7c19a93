# A real Prometheus (Debian's) scrapes the daemon on loopback every 250 ms while a 2-rank,
# 3-epoch cnn job runs (a few seconds even on a quiet machine; the lenet job of the other tests
# can finish between two scrapes): the query API shows the job's series under their own label job_id (not
# renamed exported_job), the job seen running during the run and at epoch 3 after it, the
# process_* and histogram series, and `promtool check metrics` finds nothing to lint.
# With PROM_TLS=1 (prometheus_scrape_tls.sh) the daemon serves HTTPS with a throwaway CA and
# trusts no loopback client: Prometheus scrapes with scheme https, the CA and the daemon token as
# bearer credentials, and sees the same series; without the token /metrics shows no job.
source "$(dirname "$0")/common.bash"
need_package prometheus prometheus
need_package prometheus promtool
DAEMON_PID= PROM_PID=
trap '[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
      [ -n "$PROM_PID" ] && kill -9 "$PROM_PID" 2>/dev/null; rm -rf "$TMP"' EXIT

if [ -n "${PROM_TLS:-}" ]; then
  make_tls "$TMP/tls"
  TRUST=()
  start_daemon --tls-cert "$TMP/tls/server.pem" --tls-key "$TMP/tls/server.key"
  target=localhost:${HTTP##*:}  # the certificate's host name
  scheme=https curl_tls=(--cacert "$TMP/tls/ca.pem") agent_tls=(--tls-ca "$TMP/tls/ca.pem")
  scrape_tls="    scheme: https
    tls_config:
      ca_file: $TMP/tls/ca.pem
    authorization:
      type: Bearer
      credentials_file: $TMP/token"
else
  start_daemon
  target=$HTTP scheme=http curl_tls=() agent_tls=() scrape_tls=
fi
prom=127.0.0.1:$(free_port)
cat >"$TMP/prometheus.yml" <<YML
global:
  scrape_interval: 250ms
  scrape_timeout: 250ms
scrape_configs:
  - job_name: dbs-scheduler
$scrape_tls
    static_configs:
      - targets: ['$target']
YML
promtool check config "$TMP/prometheus.yml" >/dev/null || fail "promtool rejects the test's config"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="$prom" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
PROM_PID=$!
disown "$PROM_PID"
for _ in $(seq 100); do curl -sf "http://$prom/-/ready" >/dev/null && break; sleep 0.1; done
curl -sf "http://$prom/-/ready" >/dev/null || fail "prometheus not ready: $(cat "$TMP/prometheus.log")"
echo "prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') on $prom scrapes $scheme://$target"
# Prometheus hands new targets to its scrapers up to 5 s after start: wait for the first scrape
# before the job, so that the job is seen while it runs however fast the machine is.
for _ in $(seq 300); do
  curl -sf --get "http://$prom/api/v1/query" --data-urlencode 'query=up{job="dbs-scheduler"}' |
    grep -q '"value":\[[0-9.]*,"1"\]' && break
  sleep 0.1
done

run_job prom-job 3 --model cnn --train-limit 3000 "${agent_tls[@]}" || { cat "$TMP/prom-job.out" "$TMP/daemon.log"; fail "job failed"; }
grep -q "connected to the daemon" "$TMP/prom-job.out" || fail "agents did not connect"
sleep 1  # more scrapes after the job finished

curl -sf "${curl_tls[@]}" -H "Authorization: Bearer $(cat "$TMP/token")" "$scheme://$target/metrics" \
  >"$TMP/metrics" || fail "no /metrics"
grep -q 'job_id="prom-job"' "$TMP/metrics" || fail "/metrics with the token shows no job"
if [ -n "${PROM_TLS:-}" ]; then
  curl -sf "${curl_tls[@]}" "$scheme://$target/metrics" >"$TMP/public" || fail "no public /metrics"
  grep -q 'job_id=' "$TMP/public" && fail "/metrics shows jobs to a loopback client without the token"
  grep -q '^dbs_build_info' "$TMP/public" || fail "the public /metrics lacks the daemon's own series"
  out=$(curl -s "http://$target/metrics") || true
  grep -q "this port speaks HTTPS" <<<"$out" || fail "plain HTTP on the HTTPS port: $out"
  echo "ok: no job ids without the token; plain HTTP told: $out"
fi
lint=$(promtool check metrics <"$TMP/metrics" 2>&1) || fail "promtool check metrics: $lint"
[ -z "$lint" ] || fail "promtool check metrics is not clean: $lint"
echo "promtool check metrics: clean ($(grep -c '^# TYPE' "$TMP/metrics") families)"

# query EXPR: the query API's result vector as JSON lines {"metric": {...}, "value": v}.
query() {
  curl -sf --get "http://$prom/api/v1/query" --data-urlencode "query=$1" |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
for r in d["data"]["result"]:
    print(json.dumps({"metric": r["metric"], "value": float(r["value"][1])}, sort_keys=True))'
}
check() {  # check EXPR PYTHON-CONDITION: over the result lines as `rs` (a list of dicts)
  local out
  out=$(query "$1") || fail "query $1 failed"
  python3 -c "import json, sys; rs = [json.loads(l) for l in sys.stdin if l.strip()]; sys.exit(0 if ($2) else 1)" \
    <<<"$out" || fail "query $1: expected $2; got: $out"
  echo "ok: $1 -> $(head -c 300 <<<"$out")"
}
check 'up{job="dbs-scheduler"}' 'len(rs) == 1 and rs[0]["value"] == 1'
check 'dbs_job_epoch' 'len(rs) == 1 and rs[0]["metric"] == {"__name__": "dbs_job_epoch", "job": "dbs-scheduler", "instance": "'"$target"'", "job_id": "prom-job"} and rs[0]["value"] == 3'
check '{exported_job!=""}' 'rs == []'
check 'dbs_rank_throughput_samples_per_second{job_id="prom-job"}' 'sorted(r["metric"]["rank"] for r in rs) == ["0", "1"] and all(r["value"] > 0 for r in rs)'
check 'dbs_rank_batch{job_id="prom-job"}' 'len(rs) == 2 and sum(r["value"] for r in rs) == 128'
# The info series joins a rank's figures to its host and wait mode (a quota-held node sleeps).
check 'dbs_rank_info{job_id="prom-job"}' 'sorted(r["metric"]["rank"] for r in rs) == ["0", "1"] and all(r["value"] == 1 and r["metric"]["host"] != "" and r["metric"]["waiting"].startswith(("spin (", "sleep (")) for r in rs)'
check 'dbs_rank_throughput_samples_per_second * on(job_id, rank) group_left(host, waiting) dbs_rank_info' 'len(rs) == 2 and all("waiting" in r["metric"] for r in rs)'
check 'dbs_job_state{job_id="prom-job",state="finished"}' 'len(rs) == 1 and rs[0]["value"] == 1'
check 'max_over_time(dbs_job_state{job_id="prom-job",state="running"}[5m])' 'len(rs) == 1 and rs[0]["value"] == 1'
check 'dbs_job_efficiency_ratio{job_id="prom-job"}' 'len(rs) == 1 and 0 < rs[0]["value"] <= 1.5'
check 'dbs_build_info' 'len(rs) == 1 and rs[0]["metric"]["version"] != ""'
check 'process_resident_memory_bytes{job="dbs-scheduler"}' 'len(rs) == 1 and rs[0]["value"] > 1e6'
check 'process_cpu_seconds_total{job="dbs-scheduler"}' 'len(rs) == 1 and rs[0]["value"] > 0'
check 'dbs_plan_latency_seconds_count' 'len(rs) == 1 and rs[0]["value"] == 3'
check 'histogram_quantile(0.5, dbs_plan_latency_seconds_bucket)' 'len(rs) == 1 and 0 < rs[0]["value"] < 10'
echo "prometheus scrape ok"
