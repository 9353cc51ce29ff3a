# The network is granted to dependency installs run on their own (with commands that
# run no project code beside them), never to builds, tests, scripts or publishing, and
# never to a request that mixes an install with those.
package cmdgate.network_test

import data.cmdgate.testlib as t

test_installs_alone_get_the_network if {
	every argvs in [
		[["npm", "ci"]],
		[["npm", "install", "--no-audit"]],
		[["yarn", "install", "--frozen-lockfile"]],
		[["pnpm", "install"]],
		[["pip", "install", "-r", "requirements.txt"]],
		[["python3", "-m", "pip", "install", "."]],
		[["go", "mod", "download"]],
		[["go", "mod", "tidy"]],
		[["cargo", "fetch"]],
		[["bundle", "install"]],
		[["mvn", "-q", "dependency:go-offline"]],
		[["dotnet", "restore"]],
		[["cd", "web"], ["npm", "ci"]],
		[["mkdir", "-p", "vendor"], ["go", "mod", "download"], ["ls", "vendor"]],
		[["npm", "ci"], ["pip", "install", "-r", "requirements.txt"]],
	] {
		d := t.run(argvs)
		d.action == "allow"
		d.sandbox.network == true
	}
}

test_builds_tests_and_scripts_get_none if {
	every argvs in [
		[["npm", "test"]],
		[["npm", "run", "build"]],
		[["cargo", "build"]],
		[["cargo", "test"]],
		[["mvn", "test"]],
		[["gradle", "build"]],
		[["dotnet", "test"]],
		[["go", "test", "./..."]],
		[["make"]],
		[["python3", "setup.py", "build"]],
	] {
		t.run(argvs).sandbox.network == false
	}
}

test_an_install_beside_project_code_gets_none if {
	every argvs in [
		[["npm", "ci"], ["npm", "test"]],
		[["pip", "install", "-r", "requirements.txt"], ["pytest"]],
		[["go", "mod", "download"], ["go", "build", "./..."]],
		[["cargo", "fetch"], ["make"]],
		[["npm", "install"], ["node", "index.js"]],
	] {
		t.run(argvs).sandbox.network == false
	}
}

test_publishing_and_running_packages_get_none if {
	every argvs in [
		[["npm", "publish"]],
		[["npm", "exec", "cowsay"]],
		[["npm", "create", "vite"]],
		[["yarn", "dlx", "create-react-app"]],
		[["pnpm", "dlx", "x"]],
		[["cargo", "publish"]],
		[["gem", "push", "x.gem"]],
		[["git", "push"]],
		[["npm", "login"]],
	] {
		t.run(argvs).sandbox.network == false
	}
}
