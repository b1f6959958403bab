module function-starlark/tools/goyaml

go 1.26.8

require sigs.k8s.io/yaml v1.6.0

require go.yaml.in/yaml/v2 v2.4.2 // indirect
