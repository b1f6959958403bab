module function-starlark/tools/gofloat

go 1.26.8
