// Package input holds what every reader of outside input (trace files,
// sacct documents, slurmrestd bodies, node sequences) needs alike: the
// stream gunzipped when it is gzip, and its first read failure kept where
// the decoder on top of it would lose it.
package input

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
)

// Sticky reads R and keeps in Err the first error other than io.EOF R
// gave: a broken connection, a timeout, a truncated gzip stream, a size
// cap. A json.Decoder or bufio.Scanner on top of it reports such an error
// its own way (a syntax error in the half-read record, the cut last line),
// or, for a json.Decoder, returns it again for every record after while
// More still sees the half-read one; Err says what really went wrong.
type Sticky struct {
	R   io.Reader
	Err error
}

// Read implements io.Reader.
func (s *Sticky) Read(p []byte) (int, error) {
	n, err := s.R.Read(p)
	if err != nil && err != io.EOF && s.Err == nil {
		s.Err = err
	}
	return n, err
}

var gzipMagic = []byte{0x1f, 0x8b}

// Gunzip returns what br holds: decompressed, with zr the gzip reader to
// close, when it starts with gzip's magic bytes; br itself and a nil zr
// otherwise. The error is gzip's, of a stream whose header is bad.
func Gunzip(br *bufio.Reader) (r io.Reader, zr *gzip.Reader, err error) {
	if magic, _ := br.Peek(2); !bytes.Equal(magic, gzipMagic) {
		return br, nil, nil
	}
	if zr, err = gzip.NewReader(br); err != nil {
		return nil, nil, err
	}
	return zr, zr, nil
}
