package review

// SetOnPage has x tell f the size of each page it reads.
func SetOnPage(x *Exporter, f func(tickets, events int)) { x.onPage = f }
