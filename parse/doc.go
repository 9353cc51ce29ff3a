// Package parse turns a shell script or an argv array into the command document that
// cmdgate's policy decides on (DESIGN.md contract 1).
package parse
