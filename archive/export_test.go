package archive

// FeedStep is the part of each track an unpaced read writes at once.
const FeedStep = step

// FeedAhead is how many parts the readers of an unpaced read have left
// when it writes the next.
const FeedAhead = ahead
