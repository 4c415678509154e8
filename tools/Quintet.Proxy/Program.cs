// quintet-proxy: a console app, a systemd service or a Windows service (ProxyHost decides from how it was started).
using Quintet.Proxy;

return await ProxyHost.RunAsync(args);
