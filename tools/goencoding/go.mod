module function-starlark/tools/goencoding

go 1.26.8
