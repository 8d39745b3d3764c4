// Package plural words counts in English, so that a count of one reads
// "1 message" and any other "0 messages" or "2 messages". It imports
// nothing of pgbus, so that every layer, the store included, may use it.
package plural

import "strconv"

// Integer is any integer type a count may come in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Of returns one when n is 1 and many otherwise: English uses the plural
// for zero as well as for more than one.
func Of[N Integer](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count returns n followed by the word of Of: Count(1, "message",
// "messages") is "1 message", Count(0, ...) is "0 messages".
func Count[N Integer](n N, one, many string) string {
	var s string
	if n < 0 {
		s = strconv.FormatInt(int64(n), 10)
	} else {
		s = strconv.FormatUint(uint64(n), 10)
	}
	return s + " " + Of(n, one, many)
}
