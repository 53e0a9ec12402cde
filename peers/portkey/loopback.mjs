// Loaded with `node --import` before Portkey's start-server.js: Portkey
// 1.15.2 calls @hono/node-server's serve({port}) with no hostname, so it
// would listen on every interface. This binds a listen() that names no
// host to 127.0.0.1, so the peer is reachable on loopback only, like
// every other process of a faultline run. Nothing else is changed.
import net from 'node:net';

const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
	if (typeof args[0] === 'number' || typeof args[0] === 'string') {
		if (args[1] === undefined || args[1] === null)
			args[1] = '127.0.0.1';
		else if (typeof args[1] === 'function')
			args.splice(1, 0, '127.0.0.1');
	} else if (args[0] && typeof args[0] === 'object' && args[0].port !== undefined &&
		   !args[0].host && !args[0].path) {
		args[0] = { ...args[0], host: '127.0.0.1' };
	}
	return listen.apply(this, args);
};
