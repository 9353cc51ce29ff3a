// Command cmdgate-sandbox is the init of cmdgate's linux sandbox. cmdgate starts it in
// fresh namespaces for each command; it is not meant to be run by hand (see
// `cmdgate sandbox run` for that). It is a program of its own, kept small, because it
// starts once per command.
package main

import "github.com/cmdgate/cmdgate/executor/linux/sandboxinit"

func main() { sandboxinit.Main() }
