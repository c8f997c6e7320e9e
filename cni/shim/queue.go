package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// enqueue writes one DEL as its own file: to a temporary name, fsync'd, renamed into place, and
// the directory fsync'd, so after a crash the queue holds the whole request or nothing. Names
// sort by time, so the agent applies DELs in the order they came.
func enqueue(dir string, request []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// The random part keeps two DELs of the same nanosecond apart; math/rand/v2 is seeded by the
	// runtime from the OS, and spares the shim crypto/rand's start-up.
	name := fmt.Sprintf("%020d-%012x.json", time.Now().UnixNano(), rand.Uint64()>>16)
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := writeSynced(tmp, request); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func writeSynced(path string, text []byte) error {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := file.Write(text); err != nil {
		file.Close()
		return err
	}
	if err := file.Sync(); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
