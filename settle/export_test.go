package settle

// DownCredit is downCredit, for the test of its cap.
var DownCredit = downCredit
