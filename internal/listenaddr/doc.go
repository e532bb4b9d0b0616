// Package listenaddr says where a client on the same machine reaches a
// listener from the address it was told to bind (admin.listen and the like).
package listenaddr
