apiVersion: v1
kind: ConfigMap
metadata:
  name: from-a-tpl-file
