"""A loopback Kubernetes API emulator: a test double for the core/v1 API that the kubernetes
client and the KubernetesPodOperator talk to, with one node whose containers are processes
on this machine (no cluster, no Docker).

    emulator = KubernetesEmulator(root=tmp_path, gpus=0, cpu="16", memory="64Gi").start()
    emulator.write_kubeconfig(tmp_path / "kubeconfig")   # then config_file=..., in_cluster=False
    ...
    emulator.stop()

or the ``k8s_emulator`` fixture of ``tests.k8s_emulator.fixtures``.

What is emulated
----------------
- ``/version``, ``/api``, ``/api/v1``, namespaces (any name exists once used);
- pods: create (validation, defaulting, ``generateName``), get, ``/status``, list (label and
  field selectors, all namespaces, ``watch=true``), merge/strategic/JSON patch of metadata,
  delete (grace period from the query, the ``V1DeleteOptions`` body or the pod), logs
  (``container``, ``follow``, ``timestamps``, ``sinceSeconds``, ``sinceTime``, ``tailLines``,
  ``limitBytes``);
- NetworkPolicies (``/apis/networking.k8s.io/v1``), services, secrets, config maps: create,
  get, list, patch, delete (a NetworkPolicy is stored, not enforced); events: the ones the
  scheduler and kubelet record, plus create/list with field selectors
  (``involvedObject.name=...``);
- every object a client creates or patches is checked against Kubernetes 1.29's own OpenAPI
  schemas, strictly (``tests.k8s_emulator.schemas``: unknown fields refused), and refused with
  the API server's 422 ``Invalid`` naming each field;
- Pod Security Admission (``tests.k8s_emulator.pod_security``): a pod that breaks the
  ``restricted`` profile is refused (403, PSA's message), or ``baseline`` in a namespace given
  so (``pod_security={"ns": "baseline"}``, ``privileged``: nothing enforced);
- transient failures scripted for the next requests of a method and path (``fail_next``: a
  429 with ``Retry-After``, a 503 ...), for tests of a client's retries;
- disruptions scripted by a test (``tests.k8s_emulator.test_disruptions``): ``evict`` (the
  kubelet under node pressure: ``DisruptionTarget``/``TerminationByKubelet``, SIGTERM and the
  grace period, the pod kept ``Failed`` with reason ``Evicted`` whatever its exit codes),
  ``preempt`` (``DisruptionTarget``/``PreemptionByScheduler``, then deleted with its grace
  period) and ``lose_node`` (every container killed at once, the pods deleted by the pod
  garbage collector or, ``keep_pods``, kept ``Failed`` with reason ``NodeLost``; a node that
  replaced it runs the next pods);
- every request received is recorded (``requests()``: method, path with query, User-Agent),
  for tests of what a client needs from the API, such as an RBAC Role's rules.

How pods run
------------
- Scheduling: one node (``k8s-emulator-node``) with the given capacity; a pod's cpu, memory,
  ``nvidia.com/gpu`` (and any other) requests, limits standing in for missing requests, must
  fit in what the bound, unfinished pods leave, and its ``nodeSelector``/required node
  affinity must match the node's labels. Otherwise it stays ``Pending`` with
  ``PodScheduled=False/Unschedulable`` and a ``FailedScheduling`` event such as
  ``0/1 nodes are available: 1 Insufficient nvidia.com/gpu.``, and is tried again when a pod
  finishes. Bound pods get GPU indices, given to each container as ``CUDA_VISIBLE_DEVICES``
  and ``NVIDIA_VISIBLE_DEVICES`` (empty/``void`` without GPUs).
- Images are not pulled: a container runs its ``command`` + ``args`` with this machine's
  programs (``python``/``python3`` is the running interpreter, the virtualenv's ``bin`` is
  first on ``PATH``, this process's environment is inherited under the spec's ``env``). An
  image name containing ``does-not-exist`` fails to pull (``ErrImagePull``, then
  ``ImagePullBackOff``, with ``Failed`` events), and with ``imagePullPolicy: Never``
  gives ``ErrImageNeverPull``.
- Init containers run one after another, then all containers together, each a process group
  of its own; an exit other than 0 is ``Error`` (signals as 128+n), a missing program is
  ``StartError`` (128). ``restartPolicy`` is always treated as ``Never``, except that init
  containers with ``restartPolicy: Always`` are native sidecars (Kubernetes 1.29+): started in
  their turn and left running, stopped (SIGTERM, SIGKILL after the grace period) once the main
  containers have ended, never restarted, and not counted in the pod's phase. Deleting a pod
  stops its main containers first and its sidecars once those have ended.
- Memory limits: the resident memory of each container's process tree is read every 50 ms
  (``memory_poll_seconds``); above ``limits.memory`` the tree is SIGKILLed: ``OOMKilled``,
  exit code 137, and an event. CPU limits are not enforced.
- ``env``: ``value`` (with ``$(VAR)`` expansion), ``valueFrom`` ``fieldRef``
  (``metadata.name``/``namespace``/``uid``/labels/annotations, ``spec.nodeName``,
  ``spec.serviceAccountName``, ``status.podIP``/``hostIP`` = 127.0.0.1),
  ``resourceFieldRef``, ``configMapKeyRef``/``secretKeyRef`` and ``envFrom`` from the
  emulator's ConfigMaps/Secrets (a missing one: ``CreateContainerConfigError``, retried);
  also ``HOSTNAME`` and ``KUBERNETES_SERVICE_HOST``/``PORT`` (this emulator).
- Termination messages: ``terminationMessagePath`` is a file of the container's own (rewritten
  like a mount), read when it ends; ``FallbackToLogsOnError`` uses the log's last lines.

Mount namespaces (stand-in)
---------------------------
A process cannot see container paths, so each volume is a folder on this machine
(``tests.k8s_emulator.volumes``: emptyDir under ``root``, hostPath as given, claims, NFS and
the rest under ``root/volumes``; ``KubernetesEmulator.volume_path`` says where) and every
volumeMount's ``mountPath`` (its ``subPath`` honoured) stands for that folder: any command,
arg, env value or ``workingDir`` that equals a mountPath or starts with ``mountPath + "/"`` is
rewritten to the host path, also where the path follows a separator inside the string
(``--out=/data/x``, ``sh -c 'ls /data'``, ``A:/data``). Containers of one pod mounting one
emptyDir share its folder. ``readOnly`` is recorded, not enforced; ``securityContext`` (users,
fsGroup) is ignored. A container without ``workingDir`` starts in a folder of its own under
``root``.

Cluster DNS (stand-in)
----------------------
All pods share this machine's network, and ``status.podIP`` is ``127.0.0.1``. Any host name
ending in ``.svc.cluster.local``, ``<hostname>.<subdomain>`` (a subdomain of a pod or a
service of the namespace, optionally ``.<namespace>[.svc]``), and ``<service>.<namespace>
[.svc]`` in a command, arg or env value is rewritten to ``127.0.0.1``. Services do not proxy:
clients reach ``targetPort`` on 127.0.0.1 only when ``port`` equals it, and two pods cannot
listen on one port.

Not emulated
------------
Watches report the latest state of each changed object at each look (about every 0.2 s):
quick successive changes of one object come as one event. ``dryRun`` is ignored (the request
takes effect).
exec/attach/port-forward (``connect_get_namespaced_pod_exec``, hence the KubernetesPodOperator's
``do_xcom_push`` and Istio handling), container restarts and ``previous`` logs, probes (a
running container is ready), ``activeDeadlineSeconds``, taints and tolerations, priority
classes (``preempt`` is a test's decision, not the scheduler's), service links
(``<SVC>_SERVICE_HOST``), admission beyond Pod Security (quotas, limit ranges, service-account
token volumes), NetworkPolicy enforcement, Pod Security's volume types,
``PUT``/``deletecollection``, other API groups (batch, apps, custom resources),
authentication.
"""

from tests.k8s_emulator.emulator import KubernetesEmulator

__all__ = ["KubernetesEmulator"]
