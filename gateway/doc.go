// Package gateway is cmdgate's server: the pipeline that parses, decides, audits and
// runs each command (parse → policies → audit → executor), authentication and roles,
// and the echo HTTP API of DESIGN.md contract 3.
package gateway
