<?php

declare(strict_types=1);

// Route names and URLs are a contract with the island (see docs/nextcloud-app.md): keep them stable.
return [
	'routes' => [
		['name' => 'page#index', 'url' => '/', 'verb' => 'GET'],
		['name' => 'frame#show', 'url' => '/frame', 'verb' => 'GET'],
		['name' => 'connect#start', 'url' => '/connect', 'verb' => 'GET'],
		['name' => 'connect#callback', 'url' => '/oauth/callback', 'verb' => 'GET'],

		['name' => 'api#chat', 'url' => '/api/chat', 'verb' => 'POST'],
		['name' => 'api#resume', 'url' => '/api/chat/{id}/stream', 'verb' => 'GET'],
		['name' => 'api#stopChat', 'url' => '/api/chat/{id}/stop', 'verb' => 'POST'],
		['name' => 'api#conversations', 'url' => '/api/conversations', 'verb' => 'GET'],
		['name' => 'api#conversation', 'url' => '/api/conversations/{id}', 'verb' => 'GET'],
		['name' => 'api#deleteConversation', 'url' => '/api/conversations/{id}', 'verb' => 'DELETE'],
		['name' => 'api#toolsCall', 'url' => '/api/apps/tools/call', 'verb' => 'POST'],
		['name' => 'api#toolsDispatch', 'url' => '/api/apps/tools/dispatch', 'verb' => 'POST'],
		['name' => 'api#toolsDescribe', 'url' => '/api/apps/tools/describe', 'verb' => 'POST'],
		['name' => 'api#memory', 'url' => '/api/memory', 'verb' => 'GET'],
		['name' => 'api#forgetMemory', 'url' => '/api/memory/{id}', 'verb' => 'DELETE'],
		['name' => 'api#eraseMyData', 'url' => '/api/me/data', 'verb' => 'DELETE'],
		['name' => 'api#assistants', 'url' => '/api/assistants', 'verb' => 'GET'],
		['name' => 'admin#status', 'url' => '/api/admin/status', 'verb' => 'GET'],
	],
	// The mail bridge, under /ocs/v2.php/apps/tamebi: a contract with mcp-mail (docs/mail-bridge-api.md).
	'ocs' => [
		['name' => 'mail#accounts', 'url' => '/api/v1/mail/accounts', 'verb' => 'GET'],
		['name' => 'mail#mailboxes', 'url' => '/api/v1/mail/accounts/{accountId}/mailboxes', 'verb' => 'GET'],
		['name' => 'mail#messages', 'url' => '/api/v1/mail/messages', 'verb' => 'GET'],
		['name' => 'mail#message', 'url' => '/api/v1/mail/messages/{id}', 'verb' => 'GET'],
		['name' => 'mail#send', 'url' => '/api/v1/mail/send', 'verb' => 'POST'],
		['name' => 'mail#draft', 'url' => '/api/v1/mail/drafts', 'verb' => 'POST'],
		// The registry managed inside Nextcloud (issue #30): admin only, then every signed-in person.
		['name' => 'registry#servers', 'url' => '/api/v1/admin/servers', 'verb' => 'GET'],
		['name' => 'registry#createServer', 'url' => '/api/v1/admin/servers', 'verb' => 'POST'],
		['name' => 'registry#updateServer', 'url' => '/api/v1/admin/servers/{name}', 'verb' => 'PUT'],
		['name' => 'registry#deleteServer', 'url' => '/api/v1/admin/servers/{name}', 'verb' => 'DELETE'],
		['name' => 'registry#assistants', 'url' => '/api/v1/admin/assistants', 'verb' => 'GET'],
		['name' => 'registry#createAssistant', 'url' => '/api/v1/admin/assistants', 'verb' => 'POST'],
		['name' => 'registry#updateAssistant', 'url' => '/api/v1/admin/assistants/{name}', 'verb' => 'PUT'],
		['name' => 'registry#deleteAssistant', 'url' => '/api/v1/admin/assistants/{name}', 'verb' => 'DELETE'],
		['name' => 'registry#approve', 'url' => '/api/v1/admin/assistants/{name}/approve', 'verb' => 'POST'],
		['name' => 'registry#policy', 'url' => '/api/v1/admin/policy', 'verb' => 'GET'],
		['name' => 'registry#setPolicy', 'url' => '/api/v1/admin/policy', 'verb' => 'PUT'],
		['name' => 'assistants#index', 'url' => '/api/v1/assistants', 'verb' => 'GET'],
		['name' => 'assistants#create', 'url' => '/api/v1/assistants', 'verb' => 'POST'],
		['name' => 'assistants#update', 'url' => '/api/v1/assistants/{id}', 'verb' => 'PUT'],
		['name' => 'assistants#destroy', 'url' => '/api/v1/assistants/{id}', 'verb' => 'DELETE'],
		['name' => 'assistants#share', 'url' => '/api/v1/assistants/{id}/share', 'verb' => 'POST'],
		// Talk's bot webhook (docs/talk.md): the one route Nextcloud calls without a user.
		['name' => 'talk#webhook', 'url' => '/api/v1/talk/webhook', 'verb' => 'POST'],
	],
];
