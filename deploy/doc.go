// Package deploy holds no code: it is the home of the deployment files
// beside it (compose.yaml and the compose.toml it mounts by default,
// sweeper.service, kubernetes/) and of the tests
// that check them, with the Dockerfile and .dockerignore at the
// repository's root, against the sweeper they deploy: every command they
// run is one the binary has, every file the image build needs is in its
// context, every manifest passes a Kubernetes schema and no secret is
// written into any of them.
package deploy
