module workerclass.test/kairos-schema

go 1.26.0

require github.com/kairos-io/kairos-sdk v0.0.21
