// Package release tests the release tooling without making a release: hack/release.sh's
// refusals (a version that is not semver, one CHANGELOG.md has no section for, images tagged
// otherwise, a missing chart, a dirty checkout, no SBOM tool), each of which must come before
// anything is built or dist/ is touched; its release notes; CHANGELOG.md's own sections; and
// hack/check-large-files.sh against a throwaway repository. That the release's binaries are
// built as hack/images builds them is tested in hack/images (platform_test.go), beside the
// function it compares with.
package release
