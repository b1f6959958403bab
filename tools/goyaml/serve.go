package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
)

// serve answers requests one at a time, for the fuzz targets that compare
// with Go (src/fuzzing/oracle.rs): each request and each answer is a JSON
// document preceded by its length as 4 bytes, big-endian. It returns when
// stdin ends.
func serve[R any](answer func(R) any) {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		var size uint32
		if err := binary.Read(in, binary.BigEndian, &size); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			panic(err)
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(in, frame); err != nil {
			panic(err)
		}
		var request R
		if err := json.Unmarshal(frame, &request); err != nil {
			panic(err)
		}
		reply, err := json.Marshal(answer(request))
		if err != nil {
			panic(err)
		}
		if err := binary.Write(out, binary.BigEndian, uint32(len(reply))); err != nil {
			panic(err)
		}
		if _, err := out.Write(reply); err != nil {
			panic(err)
		}
		if err := out.Flush(); err != nil {
			panic(err)
		}
	}
}
