package archive

import "github.com/moq-export/moq-export/model"

// FeedStep is the part of each track an unpaced read writes at once.
const FeedStep = step

// FeedAhead is how many parts the readers of an unpaced read have left
// when it writes the next.
const FeedAhead = ahead

// LingerSignal waits for a signal on c as the unpaced reader waits for its
// readers before it sleeps (at most LingerWait).
func LingerSignal(c <-chan struct{}) bool { return lingerSignal(c) }

// LingerWait bounds LingerSignal.
const LingerWait = model.LingerFor

// SetFeederEnding sets the function an unpaced read calls, with its
// broadcast, as it is about to end; nil removes it.
func SetFeederEnding(fn func(*model.Broadcast)) {
	if fn == nil {
		feederEnding.Store(nil)
		return
	}
	feederEnding.Store(&fn)
}
