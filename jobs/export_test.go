package jobs

// PeriodicRun is periodicRun, for the tests of uniqueness across time zones.
var PeriodicRun = periodicRun
