module function-starlark/tools/goprint

go 1.26.8
