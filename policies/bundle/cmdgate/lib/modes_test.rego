package cmdgate.lib.modes_test

import data.cmdgate.lib
import data.cmdgate.testlib as t

test_world_writable_modes if {
	every m in ["777", "0777", "00777", "666", "2", "4755", "2755", "6755", "a+w", "o+w", "ugo+rwx", "a=rwx", "o=u", "+s", "u+s", "g+s", "u=rwx,go=rwx", "o+rw,u+x"] {
		lib.world_writable_mode(m)
	}
}

test_safe_modes if {
	every m in ["755", "0755", "644", "600", "+x", "u+x", "g+w", "go-w", "a-w", "u=rwx,go=rx", "1755", "-w"] {
		not lib.world_writable_mode(m)
	}
}

test_chmod_mode_word if {
	lib.chmod_mode(t.command(0, ["chmod", "-R", "755", "dir"])) == "755"
	lib.chmod_mode(t.command(0, ["chmod", "-w", "file"])) == "-w"
	lib.chmod_mode(t.command(0, ["chmod", "--reference=x", "file"])) == ""
}

test_permissive_umask if {
	lib.permissive_umask("000")
	lib.permissive_umask("0")
	lib.permissive_umask("o+w")
	not lib.permissive_umask("022")
	not lib.permissive_umask("0002")
	not lib.permissive_umask("077")
}
