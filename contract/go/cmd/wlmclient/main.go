// Command wlmclient is the Go contract client of red-box: it drives the WLM
// gRPC API through stubs generated from proto/wlm.proto by protoc-gen-go and
// protoc-gen-go-grpc, the way the original Go virtual kubelet did, and prints
// one JSON line per step so that a test can check exactly what it saw.
//
// This file owns the command line, the connection and the output lines; the
// job flow is in flow.go, the submission load in load.go and the
// serialization modes are in codec.go.
//
//	wlmclient run    -socket PATH | -tcp HOST:PORT -ca PEM -cert PEM -key PEM  [-script FILE] [-partition P] [-timeout D]
//	wlmclient info   -socket PATH | -tcp HOST:PORT -ca PEM -cert PEM -key PEM
//	wlmclient submit -socket PATH | -tcp ...  -script FILE [-partition P] < "COUNT CONCURRENCY" lines
//	wlmclient encode < {"type": "SubmitJobRequest", "json": {...}} lines
//	wlmclient decode < {"type": "SubmitJobRequest", "hex": "0a01..."} lines
//
// Any wire error prints a line with "error" and exits with status 1; a usage
// error exits with status 2.
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
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"wlmvk/contract/api"
)

// line is one JSON output line: the step's name and what it got.
type line map[string]any

var out = json.NewEncoder(os.Stdout)

func emit(step string, fields line) {
	fields["step"] = step
	if err := out.Encode(fields); err != nil {
		fmt.Fprintln(os.Stderr, "wlmclient: writing output:", err)
		os.Exit(1)
	}
}

// fail reports a wire (or I/O) error of a step and exits 1.
func fail(step string, err error) {
	fields := line{"error": err.Error()}
	if st, ok := status.FromError(err); ok {
		fields["code"] = st.Code().String()
	}
	emit(step, fields)
	os.Exit(1)
}

func usage(msg string) {
	fmt.Fprintln(os.Stderr, "wlmclient:", msg)
	fmt.Fprintln(os.Stderr, "usage: wlmclient run|info|submit|encode|decode [flags] (wlmclient CMD -h)")
	os.Exit(2)
}

// target names where red-box listens.
type target struct {
	socket, tcp, ca, cert, key string
}

func (t *target) flags(fs *flag.FlagSet) {
	fs.StringVar(&t.socket, "socket", "", "red-box's Unix socket")
	fs.StringVar(&t.tcp, "tcp", "", "red-box's TLS TCP listener, HOST:PORT (instead of -socket)")
	fs.StringVar(&t.ca, "ca", "", "PEM file of the CA that signed the TCP listener's certificate")
	fs.StringVar(&t.cert, "cert", "", "PEM client certificate for the TCP listener (red-box demands one)")
	fs.StringVar(&t.key, "key", "", "PEM private key of -cert")
}

// dial connects as the original clients did: plain gRPC over the Unix
// socket, or TLS (ALPN h2) over TCP.
func (t *target) dial() (*grpc.ClientConn, error) {
	switch {
	case t.socket != "" && t.tcp != "":
		return nil, errors.New("give -socket or -tcp, not both")
	case t.socket != "":
		path, err := filepath.Abs(t.socket)
		if err != nil {
			return nil, err
		}
		emit("dial", line{"target": "unix://" + path})
		return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	case t.tcp != "":
		pem, err := os.ReadFile(t.ca)
		if err != nil {
			return nil, fmt.Errorf("-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-ca %s: no PEM certificate", t.ca)
		}
		config := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if t.cert != "" {
			pair, err := tls.LoadX509KeyPair(t.cert, t.key)
			if err != nil {
				return nil, fmt.Errorf("-cert/-key: %w", err)
			}
			config.Certificates = []tls.Certificate{pair}
		}
		emit("dial", line{"target": "tls://" + t.tcp})
		creds := credentials.NewTLS(config)
		return grpc.NewClient("passthrough:///"+t.tcp, grpc.WithTransportCredentials(creds))
	default:
		return nil, errors.New("-socket or -tcp is required")
	}
}

func main() {
	if len(os.Args) < 2 {
		usage("a command is required")
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var where target
	switch cmd {
	case "run":
		where.flags(fs)
		script := fs.String("script", "", "batch script of the job to run (default: a built-in one)")
		partition := fs.String("partition", "", "partition of both jobs (default: Slurm's default)")
		timeout := fs.Duration("timeout", 3*time.Minute, "deadline of the whole flow")
		_ = fs.Parse(args)
		body := defaultScript
		if *script != "" {
			data, err := os.ReadFile(*script)
			if err != nil {
				usage(err.Error())
			}
			body = string(data)
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		withClient(&where, func(c api.WorkloadManagerClient) { runFlow(ctx, c, body, *partition) })
	case "info":
		where.flags(fs)
		_ = fs.Parse(args)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		withClient(&where, func(c api.WorkloadManagerClient) { infoFlow(ctx, c) })
	case "submit":
		where.flags(fs)
		script := fs.String("script", "", "batch script of every job (required)")
		partition := fs.String("partition", "", "partition of every job (default: Slurm's default)")
		_ = fs.Parse(args)
		data, err := os.ReadFile(*script)
		if err != nil {
			usage("-script: " + err.Error())
		}
		withClient(&where, func(c api.WorkloadManagerClient) {
			loadFlow(context.Background(), c, os.Stdin, string(data), *partition)
		})
	case "encode":
		_ = fs.Parse(args)
		codec(os.Stdin, encodeOne)
	case "decode":
		_ = fs.Parse(args)
		codec(os.Stdin, decodeOne)
	default:
		usage("unknown command " + cmd)
	}
}

func withClient(where *target, body func(api.WorkloadManagerClient)) {
	conn, err := where.dial()
	if err != nil {
		fail("dial", err)
	}
	defer conn.Close()
	body(api.NewWorkloadManagerClient(conn))
}
