"""Search over KB name vectors and labels, shared by annotate and normalize: name-vector cache, search backends, entity index, label indexes, packed indexes."""
