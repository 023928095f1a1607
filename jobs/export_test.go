package jobs

// PeriodicRun is periodicRun, for the tests of uniqueness across time zones.
var PeriodicRun = periodicRun

// DownCredit is downCredit, for the test of its cap.
var DownCredit = downCredit
