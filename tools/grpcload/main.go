// Command grpcload loads a RunFunction server the way Crossplane calls it:
// through grpc-go (the version Crossplane v2.3.4 builds with), one client
// connection with Crossplane's service config (round robin, wait for
// ready), a pre-serialised request sent as raw bytes and the answers kept
// as raw bytes. benches/load.rs runs it beside its own h2 client.
//
//	grpcload -address 127.0.0.1:9443 -request req.bin -concurrency 16 -seconds 3 [-certs DIR] [-rate N]
//
// With -rate, the callers together start N calls a second, evenly spaced,
// as a controller reconciling now and then does, instead of one call
// after another: a paced server sleeps between calls, and what a call
// costs then includes waking up for it.
//
// With -certs, it speaks mTLS with the files Crossplane mounts (tls.crt,
// tls.key, ca.crt). It prints one JSON object: calls answered, errors,
// seconds under load, its own CPU time in microseconds, and every answered
// call's latency in microseconds.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
)

// Crossplane's service config for function connections
// (internal/xfn/function_runner.go).
const svcConfig = `{
	"loadBalancingConfig": [{"round_robin": {}}],
	"methodConfig": [{"name": [{}], "waitForReady": true}]
}`

const method = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"

// raw passes bytes through unchanged: the request is already serialised,
// and decoding answers would measure this client.
type raw struct{}

func (raw) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, errors.New("raw codec: not bytes")
	}
	return *b, nil
}

func (raw) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return errors.New("raw codec: not bytes")
	}
	*b = data
	return nil
}

func (raw) Name() string { return "proto" }

var _ encoding.Codec = raw{}

type result struct {
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	Seconds     float64 `json:"seconds"`
	CPUMicros   int64   `json:"cpu_us"`
	LatenciesUS []int64 `json:"latencies_us"`
	FirstError  string  `json:"first_error,omitempty"`
}

func credentialsFrom(dir, serverName string) (credentials.TransportCredentials, error) {
	if dir == "" {
		return insecure.NewCredentials(), nil
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no certificate in ca.crt")
	}
	return credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS12,
	}), nil
}

func cpuMicros() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Sec*1e6 + int64(ru.Utime.Usec) + ru.Stime.Sec*1e6 + int64(ru.Stime.Usec)
}

func main() {
	address := flag.String("address", "", "the server, HOST:PORT")
	requestFile := flag.String("request", "", "a serialised RunFunctionRequest")
	concurrency := flag.Int("concurrency", 1, "callers at once")
	seconds := flag.Float64("seconds", 3, "seconds under load")
	warmUp := flag.Int("warmup", 20, "calls before measuring")
	certs := flag.String("certs", "", "a folder with tls.crt, tls.key and ca.crt: speak mTLS")
	serverName := flag.String("server-name", "localhost", "the name the server's certificate must hold")
	rate := flag.Float64("rate", 0, "calls a second from all callers together; 0: each caller calls again at once")
	flag.Parse()

	request, err := os.ReadFile(*requestFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(2)
	}
	creds, err := credentialsFrom(*certs, *serverName)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcload: credentials:", err)
		os.Exit(2)
	}
	conn, err := grpc.NewClient(*address,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultServiceConfig(svcConfig),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(raw{})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(2)
	}
	defer conn.Close()
	call := func() error {
		var answer []byte
		return conn.Invoke(context.Background(), method, &request, &answer)
	}
	for i := 0; i < *warmUp; i++ {
		if err := call(); err != nil {
			fmt.Fprintln(os.Stderr, "grpcload: warm-up call:", err)
			os.Exit(1)
		}
	}

	cpuBefore := cpuMicros()
	started := time.Now()
	until := started.Add(time.Duration(*seconds * float64(time.Second)))
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := result{}
	// Each caller's calls are `every` apart, the callers' offset from each
	// other so that together they are evenly spaced.
	var every time.Duration
	if *rate > 0 {
		every = time.Duration(float64(*concurrency) * float64(time.Second) / *rate)
	}
	for c := 0; c < *concurrency; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			latencies := make([]int64, 0, 4096)
			errs := 0
			first := ""
			next := started.Add(every * time.Duration(c) / time.Duration(*concurrency))
			for time.Now().Before(until) {
				if every > 0 {
					time.Sleep(time.Until(next))
					next = next.Add(every)
				}
				sent := time.Now()
				if err := call(); err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				latencies = append(latencies, time.Since(sent).Microseconds())
			}
			mu.Lock()
			out.LatenciesUS = append(out.LatenciesUS, latencies...)
			out.Errors += errs
			if out.FirstError == "" {
				out.FirstError = first
			}
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	out.Seconds = time.Since(started).Seconds()
	out.CPUMicros = cpuMicros() - cpuBefore
	out.Calls = len(out.LatenciesUS)
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}
