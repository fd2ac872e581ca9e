package boltstore

// Commits is how many job-bucket commits s made.
func Commits(s *Store) int64 { return s.commits.Load() }
