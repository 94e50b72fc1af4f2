#!/usr/bin/env python3
"""Render the headroom chart and check what comes out.

For every ci/*-values.yaml: `helm lint --strict`, `helm template`, every rendered object validated
against the Kubernetes JSON schemas shipped in the kubernetes-validate package (offline, strict:
unknown fields are errors) for the oldest and newest Kubernetes versions we check. The two
prometheus-operator kinds (ServiceMonitor, PrometheusRule) have no schema there; they are checked
structurally below instead. Then assertions on what renders (GPUs = ranks = TP, headless Service,
gRPC probes, discovery DNS name, /dev/shm in memory, preStop, grace period >= drain timeout, API-key
Secret only when enabled, alert thresholds, dashboard queries).

Usage: tests/test_render.py [--helm PATH]   (run with build/venv/bin/python; needs PyYAML and
kubernetes-validate, which scripts/setup-helm installs). Exits non-zero when anything fails and
prints a last line "N passed, N failed".
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import traceback

import yaml
import kubernetes_validate

CHART = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(os.path.dirname(CHART))
NS = "serving"
RELEASE = "hr"
K8S_VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]
CRD_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor"), ("monitoring.coreos.com/v1", "PrometheusRule")}

HELM = None
RESULTS = {"passed": 0, "failed": 0}


def helm(*args, check=True):
    p = subprocess.run([HELM, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def render(values_files=(), sets=(), check=True):
    args = ["template", RELEASE, CHART, "--namespace", NS]
    for f in values_files:
        args += ["-f", f]
    for s in sets:
        args += ["--set", s]
    p = helm(*args, check=check)
    if not check:
        return p
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def one(docs, kind, name_suffix=None):
    found = [d for d in docs if d["kind"] == kind and (name_suffix is None or d["metadata"]["name"].endswith(name_suffix))]
    assert len(found) == 1, f"expected one {kind} {name_suffix or ''}, found {len(found)}"
    return found[0]


def kinds(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def container(obj, name):
    cs = [c for c in obj["spec"]["template"]["spec"]["containers"] if c["name"] == name]
    assert len(cs) == 1, f"no container {name}"
    return cs[0]


def arg_value(args, flag):
    assert flag in args, f"{flag} not in {args}"
    return args[args.index(flag) + 1]


def test(fn):
    """Register and run a test at definition time; record pass/fail."""
    name = fn.__name__
    try:
        fn()
    except Exception:  # noqa: BLE001 - report every failure and go on
        RESULTS["failed"] += 1
        print(f"FAIL {name}")
        traceback.print_exc(limit=3)
    else:
        RESULTS["passed"] += 1
        print(f"ok   {name}")
    return fn


# --- structural checks for the prometheus-operator kinds ----------------------------------------

DURATION = re.compile(r"^[0-9]+(ms|s|m|h|d|w|y)$")


def check_crd(doc):
    assert doc["metadata"].get("name") and doc["metadata"].get("namespace") == NS
    spec = doc["spec"]
    if doc["kind"] == "ServiceMonitor":
        assert set(spec) <= {"selector", "endpoints", "namespaceSelector", "jobLabel"}, spec.keys()
        assert spec["selector"]["matchLabels"], "empty selector"
        assert spec["endpoints"], "no endpoints"
        for ep in spec["endpoints"]:
            assert set(ep) <= {"port", "path", "interval", "scrapeTimeout"}, ep.keys()
            assert isinstance(ep["port"], str) and ep["path"].startswith("/")
            assert DURATION.match(ep["interval"]) and DURATION.match(ep["scrapeTimeout"])
    else:
        assert spec["groups"], "no rule groups"
        for g in spec["groups"]:
            assert set(g) <= {"name", "rules", "interval"} and g["name"] and g["rules"]
            for r in g["rules"]:
                assert set(r) <= {"alert", "record", "expr", "for", "labels", "annotations"}, r.keys()
                assert ("alert" in r) != ("record" in r)
                assert isinstance(r["expr"], str) and r["expr"].strip()
                assert r["expr"].count("(") == r["expr"].count(")"), f"unbalanced parens: {r['expr']}"
                assert "{{ ." not in r["expr"], "unrendered template"
                if "for" in r:
                    assert DURATION.match(r["for"]), r["for"]
                assert r["labels"]["severity"] in ("warning", "critical")
                assert all(isinstance(v, str) for v in r["annotations"].values())


def validate_all(docs):
    for d in docs:
        key = (d["apiVersion"], d["kind"])
        if key in CRD_KINDS:
            check_crd(d)
            continue
        for v in K8S_VERSIONS:
            try:
                kubernetes_validate.validate(d, v, strict=True)
            except kubernetes_validate.ValidationError as e:
                path = "/".join(str(p) for p in e.path)
                raise AssertionError(f"{d['kind']}/{d['metadata']['name']} invalid for Kubernetes {v} at {path}: {e.message}")


def parse_duration(s):
    return int(s[:-1]) * {"s": 1, "m": 60, "h": 3600}[s[-1]]


# --- per ci values file: lint, render, validate ---------------------------------------------------

CI_FILES = sorted(glob.glob(os.path.join(CHART, "ci", "*-values.yaml")))
RENDERED = {}


def main():
    global HELM
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", default=os.environ.get("HELM", os.path.join(REPO, "build", "tools", "helm")))
    HELM = ap.parse_args().helm

    @test
    def ci_files_present():
        names = {os.path.basename(f) for f in CI_FILES}
        assert {"tp1-values.yaml", "tp2x4-values.yaml", "monitoring-values.yaml",
                "static-discovery-values.yaml"} <= names, names

    @test
    def lint_defaults():
        helm("lint", "--strict", CHART)

    for f in CI_FILES:
        base = os.path.basename(f)

        def lint(f=f):
            helm("lint", "--strict", CHART, "-f", f)
        lint.__name__ = f"lint[{base}]"
        test(lint)

        def render_validate(f=f, base=base):
            docs = render([f])
            RENDERED[base] = docs
            validate_all(docs)
        render_validate.__name__ = f"template+kubernetes-validate[{base}]"
        test(render_validate)

    def ci(name):
        if name not in RENDERED:
            RENDERED[name] = render([os.path.join(CHART, "ci", name)])
        return RENDERED[name]

    # --- groups ----------------------------------------------------------------------------------

    @test
    def tp2_requests_two_gpus_and_launches_two_ranks():
        docs = ci("tp2x4-values.yaml")
        sts = one(docs, "StatefulSet")
        assert sts["spec"]["replicas"] == 4
        c = container(sts, "worker")
        assert c["resources"]["requests"]["nvidia.com/gpu"] == 2
        assert c["resources"]["limits"]["nvidia.com/gpu"] == 2
        assert c["command"] == ["headroom"] and c["args"][0] == "worker"
        assert arg_value(c["args"], "--tensor-parallel-size") == "2"
        assert arg_value(c["args"], "--model") == "/models/Qwen2.5-7B-Instruct"
        assert arg_value(c["args"], "--swap-space") == "4"
        # A list flag: the flag, then each value as its own word (vLLM's nargs='+').
        at = c["args"].index("--lora-modules")
        assert c["args"][at + 1:at + 3] == ["sql=/models/adapters/sql-lora",
                                            "chat=/models/adapters/chat-lora"]
        assert c["args"][at + 3].startswith("--")
        cm = one(docs, "ConfigMap", "-engine")
        assert "--tensor-parallel-size\n2\n" in cm["data"]["engine.args"]
        assert yaml.safe_load(cm["data"]["engine.yaml"])["tensor-parallel-size"] == 2
        vols = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
        assert vols["models"]["persistentVolumeClaim"]["claimName"] == "models"

    @test
    def tp1_requests_one_gpu():
        c = container(one(ci("tp1-values.yaml"), "StatefulSet"), "worker")
        assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
        assert arg_value(c["args"], "--tensor-parallel-size") == "1"
        assert arg_value(c["args"], "--model") == "dummy:tiny"

    @test
    def worker_contract_flags():
        c = container(one(ci("tp1-values.yaml"), "StatefulSet"), "worker")
        a = c["args"]
        assert arg_value(a, "--port") == "50061" and arg_value(a, "--metrics-port") == "9100"
        assert arg_value(a, "--gpu-memory-utilization") == "0.9"
        assert arg_value(a, "--block-size") == "16"
        assert "--enable-prefix-caching" in a
        for f in ("--max-model-len", "--max-num-seqs", "--max-num-batched-tokens", "--dtype", "--drain-timeout-s"):
            assert f in a, f
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert ports == {"grpc": 50061, "metrics": 9100}

    @test
    def bool_flag_false_is_left_out():
        c = container(one(render(sets=["engine.enable-prefix-caching=false"]), "StatefulSet"), "worker")
        assert "--enable-prefix-caching" not in c["args"]

    @test
    def headless_service_clusterip_none():
        docs = ci("tp1-values.yaml")
        svc = one(docs, "Service", "-group-headless")
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["spec"]["publishNotReadyAddresses"] is False
        assert one(docs, "StatefulSet")["spec"]["serviceName"] == svc["metadata"]["name"]
        assert svc["spec"]["ports"][0]["port"] == 50061
        sel = svc["spec"]["selector"]
        labels = one(docs, "StatefulSet")["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in sel.items())
        assert one(docs, "Service", "-group-metrics")["spec"]["clusterIP"] == "None"

    @test
    def group_probes_use_grpc_health():
        c = container(one(ci("tp1-values.yaml"), "StatefulSet"), "worker")
        for p in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[p]["grpc"] == {"port": 50061, "service": ""}, (p, c[p])
            assert "httpGet" not in c[p] and "exec" not in c[p] and "tcpSocket" not in c[p]
        s = c["startupProbe"]
        assert s["periodSeconds"] * s["failureThreshold"] >= 600, "startup budget too short for weight loading"

    @test
    def shm_is_memory():
        sts = one(ci("tp1-values.yaml"), "StatefulSet")
        vols = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
        assert vols["dshm"]["emptyDir"]["medium"] == "Memory"
        mounts = {m["mountPath"]: m["name"] for m in container(sts, "worker")["volumeMounts"]}
        assert mounts["/dev/shm"] == "dshm"

    @test
    def prestop_and_grace_period_cover_drain():
        for name in ("tp1-values.yaml", "tp2x4-values.yaml"):
            sts = one(ci(name), "StatefulSet")
            c = container(sts, "worker")
            assert c["lifecycle"]["preStop"]["exec"]["command"], "no preStop"
            drain = int(arg_value(c["args"], "--drain-timeout-s"))
            grace = sts["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
            assert grace >= drain, (grace, drain)
            pre = int(c["lifecycle"]["preStop"]["exec"]["command"][-1])
            assert grace >= drain + pre, (grace, drain, pre)
        r = one(ci("tp1-values.yaml"), "Deployment")
        assert container(r, "router")["lifecycle"]["preStop"]

    @test
    def grace_period_below_drain_is_refused():
        p = render(sets=["group.drainTimeoutS=600", "group.terminationGracePeriodSeconds=100"], check=False)
        assert p.returncode != 0 and "drainTimeoutS" in p.stderr, p.stderr

    @test
    def model_volume_hostpath():
        sts = one(ci("static-discovery-values.yaml"), "StatefulSet")
        vols = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
        assert vols["models"]["hostPath"]["path"] == "/mnt/models"
        assert arg_value(container(sts, "worker")["args"], "--model") == "/models/llama-3.1-8b"

    @test
    def scheduling_knobs_pass_through():
        spec = one(ci("tp2x4-values.yaml"), "StatefulSet")["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        assert spec["tolerations"][0]["key"] == "nvidia.com/gpu"
        assert "podAntiAffinity" in spec["affinity"]

    @test
    def engine_change_rolls_groups():
        a = one(render(), "StatefulSet")["spec"]["template"]["metadata"]["annotations"]["checksum/engine"]
        b = one(render(sets=["engine.max-num-seqs=17"]), "StatefulSet")["spec"]["template"]["metadata"]["annotations"]["checksum/engine"]
        assert a != b

    # --- routers ---------------------------------------------------------------------------------

    @test
    def router_discovers_headless_service_by_dns():
        docs = ci("tp1-values.yaml")
        a = container(one(docs, "Deployment"), "router")["args"]
        assert a[0] == "router"
        headless = one(docs, "Service", "-group-headless")["metadata"]["name"]
        assert arg_value(a, "--discovery") == f"dns:///{headless}.{NS}.svc.cluster.local:50061"
        assert arg_value(a, "--http-port") == "8000" and arg_value(a, "--grpc-port") == "50051"

    @test
    def router_static_discovery_lists_group_pods():
        docs = ci("static-discovery-values.yaml")
        d = arg_value(container(one(docs, "Deployment"), "router")["args"], "--discovery")
        sts = one(docs, "StatefulSet")["metadata"]["name"]
        headless = one(docs, "Service", "-group-headless")["metadata"]["name"]
        assert d == "static:///" + ",".join(f"{sts}-{i}.{headless}.{NS}.svc.cluster.local:50061" for i in range(2)), d
        d = arg_value(container(one(render(sets=["router.discovery.mode=static", "router.discovery.static={10.0.0.1:50061,10.0.0.2:50061}"]), "Deployment"), "router")["args"], "--discovery")
        assert d == "static:///10.0.0.1:50061,10.0.0.2:50061", d

    @test
    def router_shutdown_and_affinity_flags():
        dep = one(ci("tp1-values.yaml"), "Deployment")
        a = container(dep, "router")["args"]
        shutdown = int(arg_value(a, "--shutdown-timeout-s"))
        assert shutdown == int(arg_value(a, "--request-timeout-s")), "a rollout would cut requests"
        pre = int(container(dep, "router")["lifecycle"]["preStop"]["exec"]["command"][-1])
        assert dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= pre + shutdown
        assert arg_value(a, "--prefix-affinity-weight") == "1"
        a = container(one(render(sets=["router.prefixAffinityWeight=3"]), "Deployment"), "router")["args"]
        assert arg_value(a, "--prefix-affinity-weight") == "3"

    @test
    def hang_and_connection_limits_pass_through():
        router = container(one(ci("tp1-values.yaml"), "Deployment"), "router")["args"]
        assert arg_value(router, "--group-silence-timeout-s") == "10"
        assert "--max-connections" not in router, "0 leaves the router's own default"
        docs = render(sets=["router.groupSilenceTimeoutS=0", "router.maxConnections=5000",
                            "group.stepStallTimeoutS=300"])
        router = container(one(docs, "Deployment"), "router")["args"]
        assert arg_value(router, "--group-silence-timeout-s") == "0"
        assert arg_value(router, "--max-connections") == "5000"
        worker = container(one(docs, "StatefulSet"), "worker")["args"]
        assert arg_value(worker, "--step-stall-timeout-s") == "300"
        p = render(sets=["router.groupSilenceTimeoutS=2"], check=False)
        assert p.returncode != 0 and "groupSilenceTimeoutS" in p.stderr, p.stderr

    @test
    def router_grace_period_below_shutdown_is_refused():
        p = render(sets=["router.shutdownTimeoutS=600", "router.terminationGracePeriodSeconds=300"], check=False)
        assert p.returncode != 0 and "shutdownTimeoutS" in p.stderr, p.stderr

    @test
    def router_service_hpa_pdb():
        docs = ci("monitoring-values.yaml")
        svc = one(docs, "Service", "-router")
        assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {"http": 8000, "grpc": 50051}
        hpa = one(docs, "HorizontalPodAutoscaler")
        assert hpa["spec"]["scaleTargetRef"]["name"] == one(docs, "Deployment")["metadata"]["name"]
        assert "replicas" not in one(docs, "Deployment")["spec"], "replicas must be left to the HPA"
        pdbs = {p["metadata"]["name"]: p["spec"] for p in kinds(docs, "PodDisruptionBudget")}
        assert any(n.endswith("-router") and s.get("minAvailable") == 1 for n, s in pdbs.items())
        assert any(n.endswith("-group") and s.get("maxUnavailable") == 1 for n, s in pdbs.items())
        dep = one(docs, "Deployment")
        assert dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
        assert container(dep, "router")["readinessProbe"]["grpc"]["port"] == 50051
        assert one(ci("tp1-values.yaml"), "Deployment")["spec"]["replicas"] == 1
        assert not kinds(ci("tp1-values.yaml"), "HorizontalPodAutoscaler")

    # --- API key ---------------------------------------------------------------------------------

    @test
    def api_key_secret_only_when_enabled():
        for name in ("tp1-values.yaml", "tp2x4-values.yaml", "static-discovery-values.yaml"):
            docs = ci(name)
            assert not kinds(docs, "Secret"), name
            assert "--api-key-file" not in container(one(docs, "Deployment"), "router")["args"]
        docs = ci("monitoring-values.yaml")
        sec = one(docs, "Secret")
        assert sec["data"]["api-key"] == "Y2ktdGVzdC1rZXk="  # base64("ci-test-key")
        dep = one(docs, "Deployment")
        assert arg_value(container(dep, "router")["args"], "--api-key-file") == "/etc/headroom/api-key"
        vols = dep["spec"]["template"]["spec"]["volumes"]
        assert vols[0]["secret"]["secretName"] == sec["metadata"]["name"]
        assert "--api-key" not in container(one(docs, "StatefulSet"), "worker")["args"]
        docs = render(sets=["apiKey.enabled=true", "apiKey.existingSecret=mine"])
        assert not kinds(docs, "Secret")
        assert one(docs, "Deployment")["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == "mine"
        p = render(sets=["apiKey.enabled=true"], check=False)
        assert p.returncode != 0, "enabled API key without a value or Secret must fail"

    # --- monitoring ------------------------------------------------------------------------------

    @test
    def monitoring_off_by_default():
        for name in ("tp1-values.yaml", "tp2x4-values.yaml", "static-discovery-values.yaml"):
            docs = ci(name)
            assert not kinds(docs, "ServiceMonitor") and not kinds(docs, "PrometheusRule")
            assert not [d for d in kinds(docs, "ConfigMap") if d["metadata"]["name"].endswith("-dashboard")]

    @test
    def service_monitors_select_services():
        docs = ci("monitoring-values.yaml")
        sms = kinds(docs, "ServiceMonitor")
        assert len(sms) == 2
        svcs = kinds(docs, "Service")
        for sm in sms:
            assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
            sel = sm["spec"]["selector"]["matchLabels"]
            hit = [s for s in svcs if all(s["metadata"]["labels"].get(k) == v for k, v in sel.items())]
            assert len(hit) == 1, (sm["metadata"]["name"], [s["metadata"]["name"] for s in hit])
            port = sm["spec"]["endpoints"][0]["port"]
            assert port in [p["name"] for p in hit[0]["spec"]["ports"]]
        metrics = one(docs, "Service", "-group-metrics")
        assert metrics["spec"]["publishNotReadyAddresses"] is True

    def alerts():
        rule = one(ci("monitoring-values.yaml"), "PrometheusRule")
        return {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}

    @test
    def alert_kv_cache_thresholds():
        a = alerts()
        w, c = a["HeadroomKVCacheUsageHigh"], a["HeadroomKVCacheUsageCritical"]
        assert "vllm:kv_cache_usage_perc" in w["expr"] and "vllm:kv_cache_usage_perc" in c["expr"]
        assert float(re.search(r">\s*([0-9.]+)\s*$", w["expr"]).group(1)) == 0.90
        assert float(re.search(r">\s*([0-9.]+)\s*$", c["expr"]).group(1)) == 0.95
        assert parse_duration(w["for"]) == 300 and w["labels"]["severity"] == "warning"
        assert parse_duration(c["for"]) == 120 and c["labels"]["severity"] == "critical"

    @test
    def alert_queue_backlog():
        r = alerts()["HeadroomRequestsQueueing"]
        assert re.search(r"vllm:num_requests_waiting\{[^}]*\}\)\s*>\s*3\s*\*\s*sum by \(namespace, pod\) \(vllm:num_requests_running", r["expr"]), r["expr"]
        assert parse_duration(r["for"]) == 300

    @test
    def alert_no_success():
        r = alerts()["HeadroomNoSuccessfulRequests"]
        assert "rate(vllm:request_success_total" in r["expr"] and "== 0" in r["expr"]
        assert "vllm:prompt_tokens_total" in r["expr"] or "vllm:num_requests_running" in r["expr"]
        assert parse_duration(r["for"]) == 300

    @test
    def alert_group_down_and_router_refusing():
        a = alerts()
        g = a["HeadroomGroupDown"]["expr"]
        assert re.search(r"\bup\{[^}]*\}\s*==\s*0", g) and re.search(r"headroom:group_up\{[^}]*\}\s*==\s*0", g), g
        r = a["HeadroomRouterRefusing"]["expr"]
        assert re.search(r"rate\(headroom:router_refusals_total\{[^}]*\}\[5m\]\)\)\s*>\s*0$", r), r
        for rule in a.values():
            assert f'namespace="{NS}"' in rule["expr"]

    @test
    def alert_thresholds_follow_values():
        docs = render(sets=["monitoring.prometheusRule.enabled=true", "monitoring.prometheusRule.kvCacheUsage.warning=0.8", "engine.gpu-memory-utilization=0.85"])
        rule = one(docs, "PrometheusRule")
        w = [r for g in rule["spec"]["groups"] for r in g["rules"] if r["alert"] == "HeadroomKVCacheUsageHigh"][0]
        assert w["expr"].rstrip().endswith("> 0.8"), w["expr"]
        assert "80%" in w["annotations"]["summary"], w["annotations"]["summary"]
        c = container(one(docs, "StatefulSet"), "worker")
        assert arg_value(c["args"], "--gpu-memory-utilization") == "0.85"

    @test
    def dashboard_queries():
        cm = one(ci("monitoring-values.yaml"), "ConfigMap", "-dashboard")
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        dash = json.loads(cm["data"]["headroom.json"])
        exprs = " ".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))
        for needle in ("vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting",
                       "vllm:generation_tokens_total", "vllm:prompt_tokens_total",
                       "histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket",
                       "histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket",
                       "histogram_quantile(0.99, sum by (le) (rate(vllm:request_queue_time_seconds_bucket",
                       "vllm:num_preemptions_total", "headroom:router_queue_depth",
                       "sum by (reason) (rate(headroom:router_refusals_total"):
            assert needle in exprs, needle
        ids = [p["id"] for p in dash["panels"]]
        assert len(ids) == len(set(ids))

    @test
    def schema_rejects_bad_values():
        for s in ("engine.tensor-parallel-size=0", "group.model.source=s3", "router.discovery.mode=consul",
                  "monitoring.prometheusRule.kvCacheUsage.critical=2", "notAValue=1"):
            p = render(sets=[s], check=False)
            assert p.returncode != 0, f"{s} was accepted"

    total = RESULTS["passed"] + RESULTS["failed"]
    assert total > 0
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
