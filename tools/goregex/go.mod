module function-starlark/tools/goregex

go 1.26.8
