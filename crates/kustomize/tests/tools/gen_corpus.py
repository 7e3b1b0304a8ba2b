#!/usr/bin/env python3
"""Writes the input trees of the conformance corpus (tests/corpus/<case>/).

Goldens are recorded separately from kubectl kustomize (UPDATE_GOLDENS=1 cargo test --test
corpus). Each case: {files}, optional build dir."""
import os, sys, textwrap

OUT = os.path.join(os.path.dirname(__file__), "..", "corpus")

DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - containerPort: 8080
"""
SVC = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 8080
"""
CM = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  key: value
"""
cases = {}

def case(name, files, build="."):
    cases[name] = (files, build)

def k(s):
    return textwrap.dedent(s)

# --- resources
case("resources-single-file", {"kustomization.yaml": "resources:\n- deploy.yaml\n", "deploy.yaml": DEPLOY})
case("resources-multi-doc", {"kustomization.yaml": "resources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC + "---\n" + CM})
case("resources-directory-base", {"base/kustomization.yaml": "resources:\n- deploy.yaml\n- svc.yaml\n", "base/deploy.yaml": DEPLOY, "base/svc.yaml": SVC, "overlay/kustomization.yaml": "resources:\n- ../base\n"}, "overlay")
case("resources-legacy-bases", {"base/kustomization.yaml": "resources:\n- deploy.yaml\n", "base/deploy.yaml": DEPLOY, "overlay/kustomization.yaml": "bases:\n- ../base\nresources:\n- svc.yaml\n", "overlay/svc.yaml": SVC}, "overlay")
case("resources-list-kind", {"kustomization.yaml": "resources:\n- list.yaml\n", "list.yaml": k("""\
    apiVersion: v1
    kind: List
    items:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: a
      data:
        x: "1"
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: b
    """)})
case("resources-kustomization-yml", {"kustomization.yml": "resources:\n- cm.yaml\n", "cm.yaml": CM})
case("resources-empty-docs", {"kustomization.yaml": "resources:\n- cm.yaml\n", "cm.yaml": "---\n" + CM + "---\n---\n"})
case("three-level-overlay", {
    "base/kustomization.yaml": "resources:\n- deploy.yaml\n- svc.yaml\n- cm.yaml\n",
    "base/deploy.yaml": DEPLOY, "base/svc.yaml": SVC, "base/cm.yaml": CM,
    "mid/kustomization.yaml": "resources:\n- ../base\nnamePrefix: mid-\ncommonLabels:\n  tier: mid\n",
    "top/kustomization.yaml": "resources:\n- ../mid\nnamePrefix: top-\nnamespace: top\ncommonAnnotations:\n  owner: team\n",
}, "top")

# --- formatting
case("yaml-scalars", {"kustomization.yaml": "resources:\n- cm.yaml\n", "cm.yaml": k("""\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: scalars
      annotations:
        quoted-number: "80"
        yes-string: "yes"
        bool-like: "true"
        colon: "a: b"
        hash: "#x"
        trailing: "x "
        empty: ""
        tab: "a\\tb"
        unicode: "héllo ☃"
        y: "y"
    data:
      multi: |
        line one
        line two
      keep: "trailing\\n\\n"
      strip: "no newline\\nat end"
      long: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb ccccccccccccccccccccccccccccc dddd"
      leadingspace: "  indented\\nblock"
      octal: "0644"
      float: "1.5"
      date: "2024-01-01"
    """)})
case("yaml-numbers-and-types", {"kustomization.yaml": "resources:\n- obj.yaml\n", "obj.yaml": k("""\
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: types
    spec:
      int: 42
      neg: -7
      float: 0.5
      floatint: 2.0
      exp: 1e3
      octal: 0644
      hex: 0x1F
      bool: true
      yesval: yes
      nullval: ~
      date: 2001-12-14
      list: [1, two, "3"]
      emptylist: []
      emptymap: {}
      nested:
      - - a
        - b
      - name: x
        values:
        - 1
    """)})
case("yaml-key-order", {"kustomization.yaml": "resources:\n- obj.yaml\n", "obj.yaml": k("""\
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: order
    spec:
      z: 1
      a10: 2
      a9: 3
      a09: 4
      B: 5
      _u: 6
      "1": 7
      "10": 8
      "2": 9
      a-b: 10
      a.b: 11
    """)})
case("yaml-anchors-merge", {"kustomization.yaml": "resources:\n- obj.yaml\n", "obj.yaml": k("""\
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: anchors
    spec:
      defaults: &d
        cpu: 100m
        memory: 64Mi
      first: *d
      second:
        <<: *d
        memory: 128Mi
    """)})
case("yaml-long-strings", {"kustomization.yaml": "resources:\n- cm.yaml\n", "cm.yaml": k("""\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: long
      annotations:
        description: "This is a rather long description that certainly goes past the eighty column limit of the emitter"
        single: 'quoted: and long enough to wrap past the eighty column limit of the go yaml emitter ok'
    data:
      script: |
        #!/bin/sh
        echo "hello"   # comment
          indented line
      json: '{"a": 1, "b": [1, 2, 3], "c": {"d": "e"}}'
    """)})

# --- namespace
case("namespace-basic", {"kustomization.yaml": "namespace: apps\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC + "---\n" + CM})
case("namespace-cluster-scoped", {"kustomization.yaml": "namespace: apps\nresources:\n- all.yaml\n", "all.yaml": k("""\
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata:
      name: reader
    rules: []
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata:
      name: reader
    roleRef:
      apiGroup: rbac.authorization.k8s.io
      kind: ClusterRole
      name: reader
    subjects:
    - kind: ServiceAccount
      name: default
      namespace: other
    - kind: ServiceAccount
      name: app
      namespace: other
    - kind: User
      name: jane
    ---
    apiVersion: v1
    kind: Namespace
    metadata:
      name: old
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.com
    spec:
      group: example.com
      names:
        kind: Widget
        plural: widgets
      scope: Namespaced
      versions: []
    ---
    apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata:
      name: fast
    provisioner: x
    """)})
case("namespace-rolebinding-subjects", {"kustomization.yaml": "namespace: apps\nresources:\n- rb.yaml\n", "rb.yaml": k("""\
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: app
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata:
      name: app
    rules: []
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata:
      name: app
    roleRef:
      apiGroup: rbac.authorization.k8s.io
      kind: Role
      name: app
    subjects:
    - kind: ServiceAccount
      name: app
    - kind: ServiceAccount
      name: default
    - kind: ServiceAccount
      name: external
      namespace: elsewhere
    """)})
case("namespace-webhooks", {"kustomization.yaml": "namespace: hooks\nresources:\n- hooks.yaml\n", "hooks.yaml": k("""\
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata:
      name: validator
    webhooks:
    - name: v.example.com
      clientConfig:
        service:
          name: webhook
          namespace: system
          path: /validate
      admissionReviewVersions: ["v1"]
      sideEffects: None
    ---
    apiVersion: admissionregistration.k8s.io/v1
    kind: MutatingWebhookConfiguration
    metadata:
      name: mutator
    webhooks:
    - name: m.example.com
      clientConfig:
        service:
          name: webhook
          namespace: system
      admissionReviewVersions: ["v1"]
      sideEffects: None
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: webhook
      namespace: system
    spec:
      ports:
      - port: 443
    """)})
case("namespace-override-base", {"base/kustomization.yaml": "namespace: base-ns\nresources:\n- cm.yaml\n", "base/cm.yaml": CM, "overlay/kustomization.yaml": "namespace: overlay-ns\nresources:\n- ../base\n"}, "overlay")
case("namespace-apiservice", {"kustomization.yaml": "namespace: metrics\nresources:\n- api.yaml\n", "api.yaml": k("""\
    apiVersion: apiregistration.k8s.io/v1
    kind: APIService
    metadata:
      name: v1beta1.metrics.k8s.io
    spec:
      group: metrics.k8s.io
      version: v1beta1
      service:
        name: metrics-server
        namespace: kube-system
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: metrics-server
    spec:
      ports:
      - port: 443
    """)})

# --- prefix/suffix & name references
WORKLOAD_REFS = k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: app
    spec:
      selector:
        matchLabels:
          app: app
      template:
        metadata:
          labels:
            app: app
        spec:
          serviceAccountName: app-sa
          imagePullSecrets:
          - name: pull
          initContainers:
          - name: init
            image: busybox
            envFrom:
            - configMapRef:
                name: cfg
          containers:
          - name: app
            image: app:1
            env:
            - name: A
              valueFrom:
                configMapKeyRef:
                  name: cfg
                  key: a
            - name: B
              valueFrom:
                secretKeyRef:
                  name: sec
                  key: b
            envFrom:
            - secretRef:
                name: sec
          volumes:
          - name: c
            configMap:
              name: cfg
          - name: s
            secret:
              secretName: sec
          - name: p
            projected:
              sources:
              - configMap:
                  name: cfg
              - secret:
                  name: sec
          - name: data
            persistentVolumeClaim:
              claimName: data
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: cfg
    data:
      a: "1"
    ---
    apiVersion: v1
    kind: Secret
    metadata:
      name: sec
    type: Opaque
    data:
      b: Yg==
    ---
    apiVersion: v1
    kind: Secret
    metadata:
      name: pull
    type: kubernetes.io/dockerconfigjson
    data:
      .dockerconfigjson: e30=
    ---
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: app-sa
    ---
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata:
      name: data
    spec:
      accessModes: ["ReadWriteOnce"]
      resources:
        requests:
          storage: 1Gi
    """)
case("prefix-workload-refs", {"kustomization.yaml": "namePrefix: pre-\nresources:\n- all.yaml\n", "all.yaml": WORKLOAD_REFS})
case("suffix-workload-refs", {"kustomization.yaml": "nameSuffix: -suf\nresources:\n- all.yaml\n", "all.yaml": WORKLOAD_REFS})
case("prefix-suffix-namespace-refs", {"kustomization.yaml": "namePrefix: a-\nnameSuffix: -z\nnamespace: ns1\nresources:\n- all.yaml\n", "all.yaml": WORKLOAD_REFS})
case("prefix-ingress-statefulset-hpa", {"kustomization.yaml": "namePrefix: p-\nresources:\n- all.yaml\n", "all.yaml": k("""\
    apiVersion: v1
    kind: Service
    metadata:
      name: db
    spec:
      clusterIP: None
      ports:
      - port: 5432
    ---
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: db
    spec:
      serviceName: db
      selector:
        matchLabels:
          app: db
      template:
        metadata:
          labels:
            app: db
        spec:
          containers:
          - name: db
            image: postgres:16
      volumeClaimTemplates:
      - metadata:
          name: data
        spec:
          accessModes: ["ReadWriteOnce"]
          resources:
            requests:
              storage: 1Gi
    ---
    apiVersion: networking.k8s.io/v1
    kind: Ingress
    metadata:
      name: web
    spec:
      defaultBackend:
        service:
          name: db
          port:
            number: 80
      tls:
      - secretName: tls
        hosts: ["a.example.com"]
      rules:
      - host: a.example.com
        http:
          paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: db
                port:
                  number: 80
    ---
    apiVersion: v1
    kind: Secret
    metadata:
      name: tls
    type: kubernetes.io/tls
    data:
      tls.crt: ""
      tls.key: ""
    ---
    apiVersion: autoscaling/v2
    kind: HorizontalPodAutoscaler
    metadata:
      name: db
    spec:
      scaleTargetRef:
        apiVersion: apps/v1
        kind: StatefulSet
        name: db
      minReplicas: 1
      maxReplicas: 3
    """)})
case("prefix-rbac", {"kustomization.yaml": "namePrefix: p-\nnamespace: team\nresources:\n- rbac.yaml\n", "rbac.yaml": k("""\
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: runner
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata:
      name: runner
    rules:
    - apiGroups: [""]
      resources: ["configmaps"]
      resourceNames: ["settings"]
      verbs: ["get"]
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata:
      name: runner
    rules: []
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata:
      name: runner
    roleRef:
      apiGroup: rbac.authorization.k8s.io
      kind: Role
      name: runner
    subjects:
    - kind: ServiceAccount
      name: runner
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata:
      name: runner
    roleRef:
      apiGroup: rbac.authorization.k8s.io
      kind: ClusterRole
      name: runner
    subjects:
    - kind: ServiceAccount
      name: runner
      namespace: team
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: settings
    """)})
case("prefix-cronjob-job", {"kustomization.yaml": "namePrefix: batch-\nresources:\n- jobs.yaml\n", "jobs.yaml": k("""\
    apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: nightly
    spec:
      schedule: "0 3 * * *"
      jobTemplate:
        spec:
          template:
            spec:
              restartPolicy: OnFailure
              containers:
              - name: run
                image: busybox
                envFrom:
                - configMapRef:
                    name: env
    ---
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: once
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: run
            image: busybox
            env:
            - name: X
              valueFrom:
                configMapKeyRef:
                  name: env
                  key: x
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: env
    data:
      x: "1"
    """)})
case("prefix-skips-crd-namespace", {"kustomization.yaml": "namePrefix: p-\nresources:\n- all.yaml\n", "all.yaml": k("""\
    apiVersion: v1
    kind: Namespace
    metadata:
      name: keep
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.com
    spec:
      group: example.com
      names:
        kind: Widget
        plural: widgets
      scope: Namespaced
      versions: []
    ---
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: w
    """)})
case("prefix-overlay-of-prefixed-base", {"base/kustomization.yaml": "namePrefix: base-\nresources:\n- all.yaml\n", "base/all.yaml": WORKLOAD_REFS, "overlay/kustomization.yaml": "namePrefix: ov-\nnameSuffix: -x\nresources:\n- ../base\n"}, "overlay")

# --- labels & annotations
case("commonlabels-selectors", {"kustomization.yaml": "commonLabels:\n  app.kubernetes.io/part-of: shop\n  env: dev\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC + "---\n" + CM + "---\n" + k("""\
    apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata:
      name: web
    spec:
      minAvailable: 1
      selector:
        matchLabels:
          app: web
    ---
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata:
      name: web
    spec:
      podSelector:
        matchLabels:
          app: web
      ingress:
      - from:
        - podSelector:
            matchLabels:
              role: fe
    """)})
case("labels-pairs-only", {"kustomization.yaml": "labels:\n- pairs:\n    owner: alice\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC})
case("labels-include-selectors", {"kustomization.yaml": "labels:\n- pairs:\n    owner: alice\n  includeSelectors: true\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC})
case("labels-include-templates", {"kustomization.yaml": "labels:\n- pairs:\n    owner: alice\n  includeTemplates: true\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC})
case("labels-custom-fields", {"kustomization.yaml": "labels:\n- pairs:\n    owner: alice\n  fields:\n  - path: spec/extra\n    kind: Widget\n    create: true\nresources:\n- all.yaml\n", "all.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec: {}\n"})
case("labels-and-commonlabels", {"kustomization.yaml": "commonLabels:\n  a: one\nlabels:\n- pairs:\n    b: two\n- pairs:\n    c: three\n  includeSelectors: true\nresources:\n- all.yaml\n", "all.yaml": DEPLOY})
case("commonannotations", {"kustomization.yaml": "commonAnnotations:\n  note: \"hello: world\"\n  version: \"2\"\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + CM + "---\n" + k("""\
    apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: c
    spec:
      schedule: "* * * * *"
      jobTemplate:
        spec:
          template:
            spec:
              containers:
              - name: x
                image: busybox
    """)})
case("labels-statefulset-volumeclaims", {"kustomization.yaml": "commonLabels:\n  team: db\nresources:\n- sts.yaml\n", "sts.yaml": k("""\
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: db
    spec:
      serviceName: db
      selector:
        matchLabels:
          app: db
      template:
        metadata:
          labels:
            app: db
        spec:
          containers:
          - name: db
            image: postgres
      volumeClaimTemplates:
      - metadata:
          name: data
        spec:
          accessModes: ["ReadWriteOnce"]
    """)})

# --- images & replicas
case("images-newtag-newname-digest", {"kustomization.yaml": k("""\
    images:
    - name: nginx
      newTag: "1.27"
    - name: busybox
      newName: registry.example.com/busybox
    - name: redis
      digest: sha256:24a0c4b4a4c0eb97a1aabb8e29f18e917d05abfe1b7a7c07857230879ce7d3d3
    - name: app
      newName: ghcr.io/org/app
      newTag: v2
    resources:
    - all.yaml
    """), "all.yaml": k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: d
    spec:
      selector:
        matchLabels:
          a: b
      template:
        metadata:
          labels:
            a: b
        spec:
          initContainers:
          - name: init
            image: busybox:1.36
          containers:
          - name: web
            image: nginx:1.25
          - name: cache
            image: redis:7
          - name: app
            image: app
          - name: other
            image: docker.io/library/nginx:1.2
    ---
    apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: c
    spec:
      schedule: "* * * * *"
      jobTemplate:
        spec:
          template:
            spec:
              containers:
              - name: x
                image: nginx
    ---
    apiVersion: v1
    kind: Pod
    metadata:
      name: p
    spec:
      containers:
      - name: x
        image: nginx@sha256:abc
    ---
    apiVersion: example.com/v1
    kind: Workflow
    metadata:
      name: wf
    spec:
      steps:
      - containers:
        - name: s
          image: busybox
    """)})
case("replicas", {"kustomization.yaml": "replicas:\n- name: web\n  count: 5\n- name: db\n  count: 2\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + k("""\
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: db
    spec:
      serviceName: db
      selector:
        matchLabels:
          app: db
      template:
        metadata:
          labels:
            app: db
        spec:
          containers:
          - name: db
            image: postgres
    """)})
case("replicas-after-prefix", {"base/kustomization.yaml": "resources:\n- d.yaml\n", "base/d.yaml": DEPLOY, "overlay/kustomization.yaml": "namePrefix: x-\nreplicas:\n- name: web\n  count: 4\nresources:\n- ../base\n"}, "overlay")

# --- generators
case("generator-literals", {"kustomization.yaml": k("""\
    configMapGenerator:
    - name: lit
      literals:
      - A=1
      - B=hello world
      - C="quoted"
      - D=a=b
      - E=
    """)})
case("generator-files", {"kustomization.yaml": k("""\
    configMapGenerator:
    - name: files
      files:
      - app.properties
      - custom-key=config/settings.json
    """), "app.properties": "a=1\nb=2\n", "config/settings.json": '{"x": 1}\n'})
case("generator-envs", {"kustomization.yaml": k("""\
    configMapGenerator:
    - name: env
      envs:
      - app.env
    secretGenerator:
    - name: senv
      envs:
      - secret.env
    """), "app.env": "# comment\nA=1\nB=two words\n\nC=x=y\n", "secret.env": "USER=admin\nPASS=p@ss\n"})
case("generator-secret-types", {"kustomization.yaml": k("""\
    secretGenerator:
    - name: tls
      type: kubernetes.io/tls
      files:
      - tls.crt
      - tls.key
    - name: basic
      literals:
      - username=admin
      - password=a-rather-long-password-that-makes-the-base64-string-longer-than-eighty-characters-for-sure
    """), "tls.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "tls.key": "KEY\n"})
case("generator-options", {"kustomization.yaml": k("""\
    generatorOptions:
      labels:
        generated: "true"
      annotations:
        note: gen
    configMapGenerator:
    - name: opt
      literals:
      - A=1
      options:
        labels:
          local: "yes"
        immutable: true
    - name: nohash
      literals:
      - B=2
      options:
        disableNameSuffixHash: true
    """)})
case("generator-disable-hash-global", {"kustomization.yaml": "generatorOptions:\n  disableNameSuffixHash: true\nconfigMapGenerator:\n- name: a\n  literals:\n  - x=1\nsecretGenerator:\n- name: b\n  literals:\n  - y=2\n"})
case("generator-behavior-merge", {"base/kustomization.yaml": "configMapGenerator:\n- name: cfg\n  literals:\n  - A=1\n  - B=2\n", "overlay/kustomization.yaml": "resources:\n- ../base\nconfigMapGenerator:\n- name: cfg\n  behavior: merge\n  literals:\n  - B=20\n  - C=30\n"}, "overlay")
case("generator-behavior-replace", {"base/kustomization.yaml": "configMapGenerator:\n- name: cfg\n  literals:\n  - A=1\n  - B=2\n", "overlay/kustomization.yaml": "resources:\n- ../base\nconfigMapGenerator:\n- name: cfg\n  behavior: replace\n  literals:\n  - Z=26\n"}, "overlay")
case("generator-refs-rewritten", {"kustomization.yaml": "resources:\n- d.yaml\nconfigMapGenerator:\n- name: cfg\n  literals:\n  - A=1\nsecretGenerator:\n- name: sec\n  literals:\n  - B=2\n", "d.yaml": WORKLOAD_REFS.replace("name: cfg\ndata", "name: cfg-unused\ndata").split("---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: sec")[0]})
case("generator-namespace-prefix", {"kustomization.yaml": "namespace: gen\nnamePrefix: p-\nconfigMapGenerator:\n- name: cfg\n  literals:\n  - A=1\nresources:\n- d.yaml\n", "d.yaml": k("""\
    apiVersion: v1
    kind: Pod
    metadata:
      name: pod
    spec:
      containers:
      - name: c
        image: busybox
        envFrom:
        - configMapRef:
            name: cfg
    """)})
case("generator-binary-file", {"kustomization.yaml": "configMapGenerator:\n- name: bin\n  files:\n  - blob.bin\n", "blob.bin": None})
case("generator-overlay-hash-refs", {"base/kustomization.yaml": "resources:\n- pod.yaml\nconfigMapGenerator:\n- name: cfg\n  literals:\n  - A=1\n", "base/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod\nspec:\n  containers:\n  - name: c\n    image: busybox\n    envFrom:\n    - configMapRef:\n        name: cfg\n", "overlay/kustomization.yaml": "namePrefix: o-\nresources:\n- ../base\nconfigMapGenerator:\n- name: cfg\n  behavior: merge\n  literals:\n  - B=2\n"}, "overlay")

# --- JSON 6902
case("json6902-inline-ops", {"kustomization.yaml": k("""\
    resources:
    - d.yaml
    patches:
    - target:
        kind: Deployment
        name: web
      patch: |-
        - op: replace
          path: /spec/replicas
          value: 3
        - op: add
          path: /metadata/annotations
          value:
            patched: "yes"
        - op: add
          path: /spec/template/spec/containers/-
          value:
            name: sidecar
            image: envoy:1
        - op: remove
          path: /metadata/labels/app
        - op: copy
          from: /spec/template/spec/containers/0/image
          path: /metadata/annotations/image
        - op: move
          from: /metadata/annotations/patched
          path: /metadata/annotations/moved
        - op: test
          path: /spec/replicas
          value: 3
    """), "d.yaml": DEPLOY})
case("json6902-file-json", {"kustomization.yaml": "resources:\n- d.yaml\npatches:\n- path: patch.json\n  target:\n    group: apps\n    version: v1\n    kind: Deployment\n    name: web\n", "d.yaml": DEPLOY, "patch.json": '[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:2"}]\n'})
case("json6902-legacy-field", {"kustomization.yaml": "resources:\n- d.yaml\npatchesJson6902:\n- target:\n    group: apps\n    version: v1\n    kind: Deployment\n    name: web\n  path: patch.yaml\n", "d.yaml": DEPLOY, "patch.yaml": "- op: add\n  path: /spec/paused\n  value: true\n"})
case("json6902-target-regex-labels", {"kustomization.yaml": k("""\
    resources:
    - all.yaml
    patches:
    - target:
        kind: ConfigMap
        name: app-.*
      patch: |-
        - op: add
          path: /data/extra
          value: "1"
    - target:
        labelSelector: tier=backend,env in (prod,stage)
      patch: |-
        - op: add
          path: /metadata/annotations
          value: {selected: by-label}
    - target:
        annotationSelector: patch-me
      patch: |-
        - op: add
          path: /metadata/labels/annotated
          value: "true"
    """), "all.yaml": k("""\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-one
    data:
      a: "1"
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: app-two
      labels:
        tier: backend
        env: prod
    data:
      a: "2"
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: other
      labels:
        tier: backend
        env: dev
      annotations:
        patch-me: "x"
    data: {}
    """)})
case("json6902-namespace-target", {"kustomization.yaml": "resources:\n- all.yaml\npatches:\n- target:\n    namespace: b\n    kind: ConfigMap\n  patch: '[{\"op\": \"add\", \"path\": \"/data/ns\", \"value\": \"b\"}]'\n", "all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: a\ndata: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: b\ndata: {}\n"})
case("json6902-after-prefix-in-overlay", {"base/kustomization.yaml": "namePrefix: b-\nresources:\n- d.yaml\n", "base/d.yaml": DEPLOY, "overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- target:\n    kind: Deployment\n    name: b-web\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 9\n"}, "overlay")

# --- ordering
case("order-legacy-kinds", {"kustomization.yaml": "resources:\n- all.yaml\n", "all.yaml": k("""\
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata:
      name: vw
    ---
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: w
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: b
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: a
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: s
    ---
    apiVersion: v1
    kind: Namespace
    metadata:
      name: ns
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: z
      namespace: b
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: z
      namespace: a
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata:
      name: cr
    ---
    apiVersion: admissionregistration.k8s.io/v1
    kind: MutatingWebhookConfiguration
    metadata:
      name: mw
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.com
    ---
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: sa
    ---
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: j
    ---
    apiVersion: example.com/v1alpha1
    kind: Widget
    metadata:
      name: w
    """)})
case("order-sortoptions-fifo", {"kustomization.yaml": "sortOptions:\n  order: fifo\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC + "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n"})
case("order-sortoptions-legacy-custom", {"kustomization.yaml": "sortOptions:\n  order: legacy\n  legacySortOptions:\n    orderFirst:\n    - Service\n    orderLast:\n    - Namespace\nresources:\n- all.yaml\n", "all.yaml": DEPLOY + "---\n" + SVC + "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n---\n" + CM})

# --- components
case("components-basic", {
    "base/kustomization.yaml": "resources:\n- d.yaml\n", "base/d.yaml": DEPLOY,
    "comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nconfigMapGenerator:\n- name: feature\n  literals:\n  - enabled=true\ncommonLabels:\n  feature: \"on\"\n",
    "overlay/kustomization.yaml": "resources:\n- ../base\ncomponents:\n- ../comp\n",
}, "overlay")
case("components-with-patches-generators", {
    "base/kustomization.yaml": "resources:\n- d.yaml\n", "base/d.yaml": DEPLOY,
    "comp/kustomization.yaml": k("""\
        apiVersion: kustomize.config.k8s.io/v1alpha1
        kind: Component
        resources:
        - extra.yaml
        patches:
        - target:
            kind: Deployment
          patch: |-
            - op: add
              path: /spec/template/spec/containers/0/env
              value:
              - name: FEATURE
                value: "on"
        secretGenerator:
        - name: feature-secret
          literals:
          - token=abc
        """),
    "comp/extra.yaml": CM,
    "overlay/kustomization.yaml": "namePrefix: ov-\nresources:\n- ../base\ncomponents:\n- ../comp\nimages:\n- name: nginx\n  newTag: latest\n",
}, "overlay")
case("components-two-ordered", {
    "base/kustomization.yaml": "resources:\n- cm.yaml\n", "base/cm.yaml": CM,
    "c1/kustomization.yaml": "kind: Component\npatches:\n- target:\n    kind: ConfigMap\n  patch: '[{\"op\": \"add\", \"path\": \"/data/c1\", \"value\": \"1\"}]'\n",
    "c2/kustomization.yaml": "kind: Component\npatches:\n- target:\n    kind: ConfigMap\n  patch: '[{\"op\": \"replace\", \"path\": \"/data/c1\", \"value\": \"2\"}]'\n",
    "overlay/kustomization.yaml": "resources:\n- ../base\ncomponents:\n- ../c1\n- ../c2\n",
}, "overlay")

# --- misc
case("local-config-dropped", {"kustomization.yaml": "resources:\n- all.yaml\n", "all.yaml": CM + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"})
case("empty-kustomization-resources-only-generators", {"kustomization.yaml": "secretGenerator:\n- name: s\n  literals:\n  - a=b\n"})
case("crd-custom-resources-prefix-namespace", {"kustomization.yaml": "namespace: apps\nnamePrefix: x-\nresources:\n- r.yaml\n", "r.yaml": k("""\
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: GitRepository
    metadata:
      name: repo
    spec:
      interval: 1m
      url: https://example.com/repo
    ---
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    metadata:
      name: apps
    spec:
      interval: 10m
      path: ./apps
      prune: true
      sourceRef:
        kind: GitRepository
        name: repo
    """)})
case("flux-style-cluster-tree", {
    "apps/base/podinfo/kustomization.yaml": "resources:\n- deploy.yaml\n- svc.yaml\n",
    "apps/base/podinfo/deploy.yaml": DEPLOY.replace("web", "podinfo"),
    "apps/base/podinfo/svc.yaml": SVC.replace("web", "podinfo"),
    "apps/production/kustomization.yaml": "namespace: podinfo\nresources:\n- ../base/podinfo\npatches:\n- target:\n    kind: Deployment\n    name: podinfo\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 2\n",
    "clusters/production/kustomization.yaml": "resources:\n- ../../apps/production\n- ns.yaml\n",
    "clusters/production/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: podinfo\n",
}, "clusters/production")

# --- more combinations
case("kustomization-capitalized-file", {"Kustomization": "resources:\n- cm.yaml\n", "cm.yaml": CM})
case("generator-namespaced", {"kustomization.yaml": "configMapGenerator:\n- name: cfg\n  namespace: special\n  literals:\n  - A=1\n"})
case("generator-merge-secret-overlay", {"base/kustomization.yaml": "secretGenerator:\n- name: s\n  literals:\n  - a=1\n", "overlay/kustomization.yaml": "resources:\n- ../base\nsecretGenerator:\n- name: s\n  behavior: merge\n  envs:\n  - more.env\n", "overlay/more.env": "b=2\n"}, "overlay")
case("three-level-generators-components", {
    "base/kustomization.yaml": "resources:\n- d.yaml\nconfigMapGenerator:\n- name: cfg\n  literals:\n  - level=base\n",
    "base/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  selector:\n    matchLabels:\n      app: app\n  template:\n    metadata:\n      labels:\n        app: app\n    spec:\n      containers:\n      - name: app\n        image: app:1\n        envFrom:\n        - configMapRef:\n            name: cfg\n",
    "comp/kustomization.yaml": "kind: Component\nconfigMapGenerator:\n- name: cfg\n  behavior: merge\n  literals:\n  - feature=on\n",
    "mid/kustomization.yaml": "namePrefix: mid-\nresources:\n- ../base\ncomponents:\n- ../comp\n",
    "top/kustomization.yaml": "namespace: top\nnameSuffix: -top\nresources:\n- ../mid\nconfigMapGenerator:\n- name: cfg\n  behavior: merge\n  literals:\n  - level=top\nimages:\n- name: app\n  newTag: \"2\"\n",
}, "top")
case("service-selector-created", {"kustomization.yaml": "commonLabels:\n  app: x\nresources:\n- svc.yaml\n", "svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  - port: 80\n"})
case("labels-cronjob-job-daemonset", {"kustomization.yaml": "commonLabels:\n  team: ops\nresources:\n- w.yaml\n", "w.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: ds\nspec:\n  selector:\n    matchLabels:\n      app: ds\n  template:\n    metadata:\n      labels:\n        app: ds\n    spec:\n      containers:\n      - name: c\n        image: busybox\n---\napiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: cj\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n          - name: c\n            image: busybox\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: busybox\n"})
case("images-digest-and-tag", {"kustomization.yaml": "images:\n- name: nginx\n  newTag: \"1.27\"\n  digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\nresources:\n- d.yaml\n", "d.yaml": DEPLOY})
case("images-registry-port", {"kustomization.yaml": "images:\n- name: localhost:5000/app\n  newTag: v9\n- name: ghcr.io/org/tool\n  newName: ghcr.io/org/tool2\nresources:\n- p.yaml\n", "p.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: localhost:5000/app:v1\n  - name: b\n    image: ghcr.io/org/tool:1.0\n"})
case("json6902-service-ports", {"kustomization.yaml": "resources:\n- s.yaml\npatches:\n- target:\n    version: v1\n    kind: Service\n  patch: |-\n    - op: add\n      path: /spec/ports/-\n      value:\n        name: metrics\n        port: 9090\n    - op: replace\n      path: /spec/type\n      value: NodePort\n", "s.yaml": SVC.replace("spec:\n", "spec:\n  type: ClusterIP\n")})
case("json6902-multiple-targets", {"kustomization.yaml": "resources:\n- all.yaml\npatches:\n- target:\n    kind: (Deployment|StatefulSet)\n  patch: '[{\"op\": \"add\", \"path\": \"/metadata/annotations\", \"value\": {\"w\": \"1\"}}]'\n", "all.yaml": DEPLOY + "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: st\nspec:\n  serviceName: st\n  selector:\n    matchLabels:\n      a: b\n  template:\n    metadata:\n      labels:\n        a: b\n    spec:\n      containers: []\n"})
case("resources-mixed-files-and-dirs", {"kustomization.yaml": "resources:\n- svc.yaml\n- app\n- cm.yaml\n", "svc.yaml": SVC, "cm.yaml": CM, "app/kustomization.yaml": "resources:\n- d.yaml\nnamePrefix: app-\n", "app/d.yaml": DEPLOY})
case("namespace-with-components", {"base/kustomization.yaml": "resources:\n- cm.yaml\n", "base/cm.yaml": CM, "comp/kustomization.yaml": "kind: Component\nresources:\n- extra.yaml\n", "comp/extra.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: extra\nstringData:\n  a: b\n", "overlay/kustomization.yaml": "namespace: withcomp\nresources:\n- ../base\ncomponents:\n- ../comp\n"}, "overlay")
case("prefix-rbac-clusterrolebinding-suffix", {"kustomization.yaml": "nameSuffix: -s\nresources:\n- r.yaml\n", "r.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  namespace: kube-system\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cr\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: crb\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cr\nsubjects:\n- kind: ServiceAccount\n  name: sa\n  namespace: kube-system\n"})
case("annotations-and-labels-overlay-stack", {"base/kustomization.yaml": "commonAnnotations:\n  base: \"1\"\nlabels:\n- pairs:\n    layer: base\nresources:\n- d.yaml\n", "base/d.yaml": DEPLOY, "overlay/kustomization.yaml": "commonAnnotations:\n  overlay: \"2\"\nlabels:\n- pairs:\n    layer: overlay\n  includeTemplates: true\nresources:\n- ../base\n"}, "overlay")
case("generator-files-multiline-json", {"kustomization.yaml": "configMapGenerator:\n- name: dash\n  files:\n  - dash.json\n  - script.sh\n", "dash.json": "{\n  \"title\": \"Dash\",\n  \"panels\": []\n}\n", "script.sh": "#!/bin/sh\nset -e\necho \"tab\there\"\n"})
case("pvc-storageclass-priorityclass-refs", {"kustomization.yaml": "namePrefix: p-\nresources:\n- r.yaml\n", "r.yaml": "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\nprovisioner: x\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  storageClassName: fast\n  accessModes: [ReadWriteOnce]\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod\nspec:\n  priorityClassName: high\n  containers:\n  - name: c\n    image: busybox\n  volumes:\n  - name: d\n    persistentVolumeClaim:\n      claimName: data\n"})

# --- strategic merge patches
SMP_BASE = {"base/kustomization.yaml": "resources:\n- d.yaml\n- svc.yaml\n", "base/d.yaml": k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      replicas: 1
      selector:
        matchLabels:
          app: web
      template:
        metadata:
          labels:
            app: web
        spec:
          containers:
          - name: web
            image: nginx:1.25
            env:
            - name: A
              value: "1"
            - name: B
              value: "2"
            ports:
            - containerPort: 80
              name: http
            volumeMounts:
            - name: data
              mountPath: /data
          - name: sidecar
            image: envoy:1
          volumes:
          - name: data
            emptyDir: {}
          tolerations:
          - key: a
            operator: Exists
    """), "base/svc.yaml": SVC}
case("smp-patches-file", dict(SMP_BASE, **{"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: patch.yaml\n", "overlay/patch.yaml": k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      replicas: 3
      template:
        spec:
          containers:
          - name: web
            env:
            - name: B
              value: "20"
            - name: C
              value: "3"
            resources:
              limits:
                memory: 128Mi
    """)}), "overlay")
case("smp-legacy-inline-and-file", dict(SMP_BASE, **{"overlay/kustomization.yaml": "resources:\n- ../base\npatchesStrategicMerge:\n- p1.yaml\n- |-\n  apiVersion: v1\n  kind: Service\n  metadata:\n    name: web\n  spec:\n    type: LoadBalancer\n", "overlay/p1.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations:\n    patched: \"true\"\nspec:\n  template:\n    spec:\n      containers:\n      - name: sidecar\n        image: envoy:2\n"}), "overlay")
case("smp-delete-directives", dict(SMP_BASE, **{"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: patch.yaml\n", "overlay/patch.yaml": k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      template:
        spec:
          containers:
          - name: sidecar
            $patch: delete
          - name: web
            env:
            - name: A
              $patch: delete
          volumes:
          - name: data
            $patch: delete
          tolerations: null
    """)}), "overlay")
case("smp-replace-directive", dict(SMP_BASE, **{"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: patch.yaml\n", "overlay/patch.yaml": k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      template:
        spec:
          containers:
          - $patch: replace
          - name: only
            image: busybox
    """)}), "overlay")
case("smp-delete-whole-object", dict(SMP_BASE, **{"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: Service\n    metadata:\n      name: web\n    $patch: delete\n"}), "overlay")
case("smp-target-selector", dict(SMP_BASE, **{"overlay/kustomization.yaml": k("""\
    resources:
    - ../base
    patches:
    - target:
        kind: Deployment
        labelSelector: ""
      patch: |-
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: any-name
        spec:
          template:
            spec:
              securityContext:
                runAsNonRoot: true
    """)}), "overlay")
case("smp-ports-and-mounts", dict(SMP_BASE, **{"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: patch.yaml\n", "overlay/patch.yaml": k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      template:
        spec:
          containers:
          - name: web
            ports:
            - containerPort: 9090
              name: metrics
            volumeMounts:
            - name: cache
              mountPath: /cache
          volumes:
          - name: cache
            emptyDir:
              medium: Memory
    """)}), "overlay")
case("smp-custom-resource", {"kustomization.yaml": "resources:\n- w.yaml\npatches:\n- patch: |-\n    apiVersion: example.com/v1\n    kind: Widget\n    metadata:\n      name: w\n    spec:\n      list:\n      - c\n      map:\n        b: 20\n        c: 30\n", "w.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  list:\n  - a\n  - b\n  map:\n    a: 1\n    b: 2\n"})
case("smp-after-namespace-in-base", {"base/kustomization.yaml": "namespace: apps\nresources:\n- d.yaml\n", "base/d.yaml": DEPLOY, "overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: web\n      namespace: apps\n    spec:\n      replicas: 7\n"}, "overlay")
case("smp-patch-multidoc-file", dict(SMP_BASE, **{"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: patches.yaml\n", "overlay/patches.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 443\n    targetPort: 8443\n"}), "overlay")
case("components-patches-generators-smp", {
    "base/kustomization.yaml": "resources:\n- d.yaml\n", "base/d.yaml": DEPLOY,
    "comp/kustomization.yaml": "kind: Component\npatches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: web\n    spec:\n      template:\n        spec:\n          containers:\n          - name: web\n            envFrom:\n            - configMapRef:\n                name: feature\nconfigMapGenerator:\n- name: feature\n  literals:\n  - ENABLED=1\n",
    "overlay/kustomization.yaml": "namePrefix: prod-\nnamespace: prod\nresources:\n- ../base\ncomponents:\n- ../comp\n",
}, "overlay")

# --- replacements
case("replacements-basic", {"kustomization.yaml": k("""\
    resources:
    - all.yaml
    replacements:
    - source:
        kind: ConfigMap
        name: settings
        fieldPath: data.host
      targets:
      - select:
          kind: Deployment
        fieldPaths:
        - spec.template.spec.containers.[name=web].env.[name=HOST].value
        - metadata.annotations.host
        options:
          create: true
    - source:
        kind: Service
        name: web
      targets:
      - select:
          kind: ConfigMap
        fieldPaths:
        - data.service
    """), "all.yaml": DEPLOY.replace("        ports:", "        env:\n        - name: HOST\n          value: placeholder\n        ports:") + "---\n" + SVC + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  host: db.example.com\n  service: x\n"})
case("replacements-delimiter-index", {"kustomization.yaml": k("""\
    resources:
    - all.yaml
    replacements:
    - source:
        kind: Deployment
        name: web
        fieldPath: spec.template.spec.containers.0.image
        options:
          delimiter: ':'
          index: 1
      targets:
      - select:
          kind: ConfigMap
          name: settings
        fieldPaths:
        - data.version
      - select:
          kind: ConfigMap
          name: settings
        fieldPaths:
        - data.image
        options:
          delimiter: ':'
          index: 1
    """), "all.yaml": DEPLOY + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: old\n  image: busybox:old\n"})
case("replacements-file-and-reject", {"kustomization.yaml": "resources:\n- all.yaml\nreplacements:\n- path: repl.yaml\n", "repl.yaml": k("""\
    source:
      kind: ConfigMap
      name: src
      fieldPath: data.value
    targets:
    - select:
        kind: ConfigMap
      reject:
      - name: src
      - name: skip
      fieldPaths:
      - data.value
    """), "all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\ndata:\n  value: new\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t1\ndata:\n  value: old\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: skip\ndata:\n  value: old\n"})
case("replacements-int-target-and-map", {"kustomization.yaml": k("""\
    resources:
    - all.yaml
    replacements:
    - source:
        kind: ConfigMap
        name: src
        fieldPath: data.replicas
      targets:
      - select:
          kind: Deployment
        fieldPaths:
        - spec.replicas
    - source:
        kind: ConfigMap
        name: src
        fieldPath: metadata.labels
      targets:
      - select:
          kind: Deployment
        fieldPaths:
        - spec.template.metadata.labels
    """), "all.yaml": DEPLOY + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\n  labels:\n    app: web\n    copied: \"yes\"\ndata:\n  replicas: \"5\"\n"})
case("replacements-after-prefix", {"base/kustomization.yaml": "resources:\n- all.yaml\n", "base/all.yaml": DEPLOY + "---\n" + SVC, "overlay/kustomization.yaml": "namePrefix: p-\nresources:\n- ../base\nreplacements:\n- source:\n    kind: Service\n    name: web\n  targets:\n  - select:\n      kind: Deployment\n      name: web\n    fieldPaths:\n    - metadata.annotations.svc\n    options:\n      create: true\n"}, "overlay")

# --- vars
case("vars-basic", {"kustomization.yaml": k("""\
    namePrefix: v-
    resources:
    - all.yaml
    vars:
    - name: SVC_NAME
      objRef:
        apiVersion: v1
        kind: Service
        name: web
    - name: SVC_PORT
      objRef:
        apiVersion: v1
        kind: Service
        name: web
      fieldRef:
        fieldPath: spec.ports[0].port
    """), "all.yaml": SVC + "---\n" + k("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: client
    spec:
      selector:
        matchLabels:
          app: client
      template:
        metadata:
          labels:
            app: client
        spec:
          containers:
          - name: c
            image: busybox
            command: ["sh", "-c", "wget $(SVC_NAME):$(SVC_PORT)"]
            args:
            - --port=$(SVC_PORT)
            - $$(ESCAPED)
            - $(UNKNOWN)
            env:
            - name: TARGET
              value: http://$(SVC_NAME)
            - name: PORT
              value: $(SVC_PORT)
    """)})
case("vars-from-base", {"base/kustomization.yaml": "resources:\n- all.yaml\nvars:\n- name: CM\n  objRef:\n    apiVersion: v1\n    kind: ConfigMap\n    name: cfg\n  fieldRef:\n    fieldPath: data.key\n", "base/all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  key: from-config\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n    args: [\"$(CM)\"]\n", "overlay/kustomization.yaml": "namespace: o\nresources:\n- ../base\n"}, "overlay")

# --- more generators and formatting
case("generator-long-values", {"kustomization.yaml": "configMapGenerator:\n- name: long\n  literals:\n  - LONG=" + "word " * 30 + "end\n  - TAB=a\tb\n  - 'COLON=key: value'\n  - HASH=#comment\n  - \"QUOTE='single'\"\n  - YES=yes\n  - NUM=0123\n"})
case("generator-env-and-files-secret", {"kustomization.yaml": "secretGenerator:\n- name: mixed\n  envs:\n  - a.env\n  files:\n  - cert.pem\n  literals:\n  - extra=1\n", "a.env": "X=1\nY=2\n", "cert.pem": "-----BEGIN CERTIFICATE-----\n" + "A" * 64 + "\n" + "B" * 64 + "\n-----END CERTIFICATE-----\n"})
case("namespace-and-generators-with-refs-in-overlay", {"base/kustomization.yaml": "resources:\n- pod.yaml\nsecretGenerator:\n- name: tok\n  literals:\n  - t=1\n", "base/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n    env:\n    - name: T\n      valueFrom:\n        secretKeyRef:\n          name: tok\n          key: t\n", "overlay/kustomization.yaml": "namespace: z\nnameSuffix: -z\nresources:\n- ../base\n"}, "overlay")

case("annotations-untyped-values", {"kustomization.yaml": "resources:\n- a.yaml\npatches:\n- target:\n    kind: ConfigMap\n  patch: |-\n    - op: add\n      path: /metadata/annotations/from-patch\n      value: 5\n", "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    l1: 1\n    l2: true\n  annotations:\n    a1: 0644\n    a2: ~\n    a3: 1.50\n    a4: true\n    a5:\n    a6: 0x10\n    a7: 'quoted'\nspec:\n  template:\n    metadata:\n      annotations:\n        t1: 0644\n"})

def main():
    for name, (files, build) in sorted(cases.items()):
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        for rel, content in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            if content is None:
                with open(p, "wb") as f:
                    f.write(bytes(range(256)))
            else:
                with open(p, "w") as f:
                    f.write(content)
        if build != ".":
            with open(os.path.join(d, "BUILD"), "w") as f:
                f.write(build + "\n")
    print(len(cases), "cases")

main()
