#!/usr/bin/env python3
"""The official Python Kubernetes client (PyPI `kubernetes`, installed by ./test.sh into
tests/py/venv) against a devcluster: typed and dynamic clients, watches, server-side apply,
the scale/status/log subresources, DELETE answers and the 404s of what the server lacks.

Usage: python_client.py KUBECONFIG

Prints `ok <step>` for each step and exits 0; the first failure prints `FAILED <step>: <why>`
and exits 1. Waits use watches (no fixed sleeps); each watch has a generous server-side timeout
so a broken server fails the run instead of hanging it.
"""

import sys
import traceback

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

NS = "py"
WAIT = 60


def wait_pods(core, selector, count):
    """Watches Pods matching `selector` until exactly `count` are Running and ready."""
    w = watch.Watch()
    ready = {}
    for ev in w.stream(core.list_namespaced_pod, NS, label_selector=selector, timeout_seconds=WAIT):
        pod = ev["object"]
        name = pod.metadata.name
        ok = (
            ev["type"] != "DELETED"
            and pod.metadata.deletion_timestamp is None
            and pod.status.phase == "Running"
            and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        )
        ready[name] = ok
        if sum(ready.values()) == count and len([v for v in ready.values() if v]) == count:
            live = [
                p for p in core.list_namespaced_pod(NS, label_selector=selector).items
                if p.metadata.deletion_timestamp is None
            ]
            if len(live) == count:
                w.stop()
                return live
    raise AssertionError(f"{count} ready pods for {selector} not seen within {WAIT}s: {ready}")


def main(kubeconfig):
    api = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    batch = client.BatchV1Api(api)
    step = "start"
    try:
        step = "typed create_namespace without kind or apiVersion"
        ns = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
        assert ns.metadata.name == NS and ns.status.phase == "Active", ns
        print("ok", step)

        step = "nodes are Ready with capacity"
        nodes = core.list_node().items
        assert len(nodes) >= 1, nodes
        for n in nodes:
            ready = [c for c in n.status.conditions if c.type == "Ready"]
            assert ready and ready[0].status == "True", n.status.conditions
            assert n.status.capacity["pods"] == "110", n.status.capacity
        print("ok", step)

        step = "typed deployment create and pods watched to readiness"
        dep = client.V1Deployment(
            metadata=client.V1ObjectMeta(name="web"),
            spec=client.V1DeploymentSpec(
                replicas=2,
                selector=client.V1LabelSelector(match_labels={"app": "web"}),
                template=client.V1PodTemplateSpec(
                    metadata=client.V1ObjectMeta(labels={"app": "web"}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="nginx", image="nginx:1.27")]),
                ),
            ),
        )
        apps.create_namespaced_deployment(NS, dep)
        pods = wait_pods(core, "app=web", 2)
        node_names = {n.metadata.name for n in nodes}
        for p in pods:
            assert p.spec.node_name in node_names, p.spec.node_name
            assert p.status.pod_ip, p.status
        print("ok", step)

        step = "scale subresource read and patched"
        scale = apps.read_namespaced_deployment_scale("web", NS)
        assert scale.spec.replicas == 2 and scale.status.selector == "app=web", scale
        # This client sends a patch as application/json-patch+json: a JSON patch, then.
        apps.patch_namespaced_deployment_scale("web", NS, [{"op": "replace", "path": "/spec/replicas", "value": 3}])
        assert apps.read_namespaced_deployment("web", NS).spec.replicas == 3
        wait_pods(core, "app=web", 3)
        print("ok", step)

        step = "status subresource"
        st = apps.read_namespaced_deployment_status("web", NS)
        assert st.status.ready_replicas == 3 and st.status.observed_generation == st.metadata.generation, st.status
        print("ok", step)

        step = "pod log says it is simulated"
        name = core.list_namespaced_pod(NS, label_selector="app=web").items[0].metadata.name
        log = core.read_namespaced_pod_log(name, NS)
        assert "logs are simulated" in log, log
        print("ok", step)

        step = "delete of a ConfigMap answers Status Success"
        core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "1"}))
        status = core.delete_namespaced_config_map("c", NS)
        assert status.status == "Success" and status.details.name == "c" and status.details.kind == "configmaps", status
        print("ok", step)

        step = "delete of a running Pod answers the terminating Pod, and it is replaced"
        deleted = core.delete_namespaced_pod(name, NS)
        assert deleted.metadata.name == name and deleted.metadata.deletion_timestamp is not None, deleted.metadata
        pods = wait_pods(core, "app=web", 3)
        assert name not in {p.metadata.name for p in pods}, name
        print("ok", step)

        step = "a Job completes"
        job = client.V1Job(
            metadata=client.V1ObjectMeta(name="once"),
            spec=client.V1JobSpec(template=client.V1PodTemplateSpec(spec=client.V1PodSpec(
                restart_policy="Never", containers=[client.V1Container(name="c", image="busybox")]))),
        )
        batch.create_namespaced_job(NS, job)
        w = watch.Watch()
        done = False
        for ev in w.stream(batch.list_namespaced_job, NS, field_selector="metadata.name=once", timeout_seconds=WAIT):
            conds = ev["object"].status.conditions or []
            if any(c.type == "Complete" and c.status == "True" for c in conds):
                done = True
                w.stop()
        assert done, "the Job did not complete"
        print("ok", step)

        step = "dynamic client create, server-side apply, get"
        dyn = dynamic.DynamicClient(api)
        cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
        cms.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"x": "1"}}, namespace=NS)
        cms.server_side_apply(
            body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "namespace": NS}, "data": {"y": "2"}},
            name="applied", namespace=NS, field_manager="py-test",
        )
        got = cms.get(name="applied", namespace=NS)
        assert got.data.y == "2", got
        managers = [m.manager for m in got.metadata.managedFields]
        assert "py-test" in managers, managers
        deps = dyn.resources.get(api_version="apps/v1", kind="Deployment")
        assert deps.get(name="web", namespace=NS).spec.replicas == 3
        print("ok", step)

        step = "scale of a kind without the subresource is 404"
        try:
            api.call_api(f"/api/v1/namespaces/{NS}/configmaps/d/scale", "GET", response_type="object", auth_settings=["BearerToken"], _return_http_data_only=True)
            raise AssertionError("configmaps/scale answered")
        except ApiException as e:
            assert e.status == 404, e
        print("ok", step)

        step = "kinds of a later Kubernetes version are 404"
        try:
            dyn.resources.get(api_version="resource.k8s.io/v1", kind="DeviceClass")
            raise AssertionError("resource.k8s.io/v1 DeviceClass found")
        except ResourceNotFoundError:
            pass
        try:
            api.call_api("/apis/storage.k8s.io/v1/volumeattributesclasses", "GET", response_type="object", auth_settings=["BearerToken"], _return_http_data_only=True)
            raise AssertionError("volumeattributesclasses answered")
        except ApiException as e:
            assert e.status == 404, e
        print("ok", step)

        step = "namespace delete answers the terminating namespace"
        # The client reads the answer as a V1Status (its OpenAPI type); the server sends the
        # Namespace, as kube-apiserver does, whose kind shows through.
        ns = core.delete_namespace(NS)
        assert ns.kind == "Namespace", ns
        print("ok", step)
    except Exception as e:  # noqa: BLE001 - any failure is the step's
        print(f"FAILED {step}: {e}")
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
