// The serialization modes of wlmclient: encode builds a message of
// proto/wlm.proto from its protojson form and prints the hex of its wire
// bytes; decode parses wire bytes given in hex and prints the message as
// protojson (proto field names) with the hex of its bytes serialized again.
// A test compares both with what Python's betterproto makes of the same
// message, byte for byte.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// request is one input line: a message type of package api and either its
// protojson form (encode) or its wire bytes in hex (decode).
type request struct {
	Type string          `json:"type"`
	JSON json.RawMessage `json:"json"`
	Hex  string          `json:"hex"`
}

var (
	marshal   = proto.MarshalOptions{Deterministic: true}
	toJSON    = protojson.MarshalOptions{UseProtoNames: true}
	fromJSON  = protojson.UnmarshalOptions{}
	fromBytes = proto.UnmarshalOptions{}
)

func codec(in io.Reader, one func(request) (line, error)) {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var req request
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			fail("codec", fmt.Errorf("input line: %w", err))
		}
		result, err := one(req)
		if err != nil {
			fail("codec", fmt.Errorf("%s: %w", req.Type, err))
		}
		result["type"] = req.Type
		emit("codec", result)
	}
	if err := scanner.Err(); err != nil {
		fail("codec", err)
	}
}

func newMessage(name string) (proto.Message, error) {
	kind, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName("api." + name))
	if err != nil {
		return nil, err
	}
	return kind.New().Interface(), nil
}

func encodeOne(req request) (line, error) {
	msg, err := newMessage(req.Type)
	if err != nil {
		return nil, err
	}
	if err := fromJSON.Unmarshal(req.JSON, msg); err != nil {
		return nil, err
	}
	wire, err := marshal.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return line{"hex": hex.EncodeToString(wire)}, nil
}

func decodeOne(req request) (line, error) {
	msg, err := newMessage(req.Type)
	if err != nil {
		return nil, err
	}
	wire, err := hex.DecodeString(req.Hex)
	if err != nil {
		return nil, err
	}
	if err := fromBytes.Unmarshal(wire, msg); err != nil {
		return nil, err
	}
	if unknown := msg.ProtoReflect().GetUnknown(); len(unknown) > 0 {
		return nil, fmt.Errorf("%d bytes of unknown fields", len(unknown))
	}
	text, err := toJSON.Marshal(msg)
	if err != nil {
		return nil, err
	}
	again, err := marshal.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return line{"json": json.RawMessage(text), "hex": hex.EncodeToString(again)}, nil
}
