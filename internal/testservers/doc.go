// Package testservers starts the throwaway PostgreSQL and Redis servers of hack/ for one
// test, or uses the servers the environment names (MAO_TEST_POSTGRES_URL,
// MAO_TEST_REDIS_ADDR). A test that cannot get a server fails; it never skips.
package testservers
